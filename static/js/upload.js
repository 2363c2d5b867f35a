// Upload page: files, dropped folders and a folder picker (relative paths kept, so
// attempt_0/3/stderr.log stays rank 3's), each file's role recognised from its name and content
// (log, launch command, config, data sample) and correctable, per-file notes (empty: ignored;
// NUL bytes: kept; binary: refused), a removable list, then an XHR upload with a progress bar and
// the server's error next to the button and on the file it names. Without JS the form posts normally.
(function () {
  "use strict";
  var form = document.getElementById("upload-form");
  if (!form || !window.XMLHttpRequest || !window.FormData) return;
  var fileInput = form.querySelector("input[type=file][name=logs]");
  var folderInput = document.getElementById("folder-input");
  var zone = document.getElementById("drop-zone");
  var table = document.getElementById("file-table");
  var list = document.getElementById("upload-file-list");
  var progress = document.getElementById("upload-progress");
  var message = document.getElementById("upload-message");
  var commandField = form.querySelector("[name=command]");
  var entries = [];
  var ROLES = [["log", "Log"], ["command", "Launch command"], ["config", "Config"], ["data", "Data sample"],
    ["ignore", "Ignore"]];
  var SNIFF = 8192;
  if (folderInput) folderInput.parentNode.hidden = false;

  function humanSize(bytes) {
    var units = ["B", "KB", "MB", "GB"];
    var index = 0;
    while (bytes >= 1024 && index < units.length - 1) { bytes /= 1024; index += 1; }
    return (index ? bytes.toFixed(1) : bytes) + " " + units[index];
  }

  function readHead(file) {
    if (file.size === 0) return Promise.resolve(new Uint8Array(0));
    return file.slice(0, SNIFF).arrayBuffer().then(function (buffer) { return new Uint8Array(buffer); });
  }

  function isArchive(name) { return /\.(zip|tar|tgz|tar\.gz|tar\.bz2|tar\.xz|gz)$/i.test(name); }

  // The share of bytes that are not text: control characters other than tab/newline/CR/form feed.
  function binaryShare(bytes) {
    if (!bytes.length) return { share: 0, nul: 0 };
    var odd = 0, nul = 0;
    for (var i = 0; i < bytes.length; i += 1) {
      var b = bytes[i];
      if (b === 0) nul += 1;
      if ((b < 32 && b !== 9 && b !== 10 && b !== 13 && b !== 12 && b !== 27) || b === 127) odd += 1;
    }
    return { share: odd / bytes.length, nul: nul };
  }

  function guessRole(path, text) {
    var name = path.split("/").pop().toLowerCase();
    var head = text.slice(0, 2000);
    if (isArchive(name) || /(^|[._-])(stdout|stderr|log)([._-]|$)|\.log$|\.out$|\.err$/.test(name)) return "log";
    if (/^(command|cmd|launch|run|train)[^/]*\.(txt|sh)$/.test(name) ||
        /^\s*(\S+=\S+\s+)*(torchrun|deepspeed|accelerate launch|srun|python[0-9.]* -m torch\.distributed)\b/.test(head) &&
        head.split("\n").filter(function (line) { return line.trim(); }).length <= 12) return "command";
    if (/\.(jsonl|ndjson)$/.test(name) || (/(data|sample|train|dataset)/.test(name) && /\.json$/.test(name) &&
        !/zero_optimization/.test(head))) return "data";
    if (/\.(ya?ml|json|toml|cfg)$/.test(name) &&
        (/(ds_|deepspeed|accelerate|fsdp|config|zero)/.test(name) || /zero_optimization|distributed_type|fsdp_config/.test(head))) {
      return "config";
    }
    if (/\.json$/.test(name) && /^\s*[[{]\s*"?(instruction|conversations|messages|text|prompt)/.test(head)) return "data";
    return "log";
  }

  // Listed at once (roles guessed from the names), then refined from each file's first bytes.
  function addFiles(items) {
    var added = items.map(function (item) {
      var path = item.path || item.file.name;
      var entry = { file: item.file, path: path, role: guessRole(path, ""), note: "", problem: "", sniffed: false };
      if (item.file.size === 0) {
        entry.role = "ignore";
        entry.note = "empty: ignored";
      }
      var same = entries.findIndex(function (other) { return other.path === entry.path; });
      if (same >= 0) entries[same] = entry; else entries.push(entry);
      return entry;
    });
    checkSingles();
    render();
    return Promise.all(added.map(function (entry) {
      return readHead(entry.file).then(function (bytes) {
        var stats = binaryShare(bytes);
        var text = new TextDecoder("utf-8", { fatal: false }).decode(bytes);
        if (entry.file.size > 0 && !entry.chosen) entry.role = guessRole(entry.path, text);
        if (!isArchive(entry.path) && stats.share > 0.3) {
          entry.problem = "binary, not a log: the server will refuse it";
        } else if (!isArchive(entry.path) && stats.nul) {
          entry.note = "has NUL bytes: kept, shown as \uFFFD";
        }
        entry.sniffed = true;
      }, function () { entry.sniffed = true; });
    })).then(function () {
      checkSingles();
      render();
    });
  }

  // The form has one config and one data sample field: a second file of that role must be chosen between.
  function checkSingles() {
    ["config", "data"].forEach(function (role) {
      var chosen = entries.filter(function (entry) { return entry.role === role; });
      chosen.forEach(function (entry, index) {
        if (entry.problem.indexOf("only one") === 0 || entry.problem === "") {
          entry.problem = chosen.length > 1 && index > 0 ? "only one " + (role === "data" ? "data sample" : "config") +
            " is used: pick another role or remove it" : "";
        }
      });
    });
  }

  var ORDER = { command: 0, config: 1, data: 2, log: 3, ignore: 4 };
  var collator = new Intl.Collator(undefined, { numeric: true });

  // Next to the file input, which still says "No file chosen": what the list below holds.
  function summarise() {
    var summary = document.getElementById("file-summary");
    if (!summary) return;
    if (!entries.length) { summary.textContent = ""; return; }
    var counts = {};
    entries.forEach(function (entry) { counts[entry.role] = (counts[entry.role] || 0) + 1; });
    var parts = [];
    [["log", "log"], ["command", "launch command"], ["config", "config"], ["data", "data sample"], ["ignore", "ignored"]]
      .forEach(function (pair) {
        var count = counts[pair[0]];
        if (count) parts.push(count + " " + pair[1] + (count > 1 && pair[0] !== "ignore" ? "s" : ""));
      });
    summary.textContent = entries.length + " file" + (entries.length > 1 ? "s" : "") + " chosen: " + parts.join(", ");
  }

  function render() {
    entries.sort(function (a, b) {
      return (ORDER[a.role] - ORDER[b.role]) || collator.compare(a.path, b.path);
    });
    summarise();
    while (list.firstChild) list.removeChild(list.firstChild);
    table.hidden = entries.length === 0;
    entries.forEach(function (entry, index) {
      var item = document.createElement("li");
      item.className = "file-item" + (entry.problem ? " has-problem" : "") + (entry.role === "ignore" ? " ignored" : "");
      item.setAttribute("data-path", entry.path);
      if (entry.sniffed) item.setAttribute("data-sniffed", "");
      var name = document.createElement("span");
      name.className = "file-name";
      name.textContent = entry.path;
      var size = document.createElement("span");
      size.className = "file-size";
      size.textContent = humanSize(entry.file.size);
      var select = document.createElement("select");
      select.className = "file-role";
      select.setAttribute("aria-label", "Role of " + entry.path);
      ROLES.forEach(function (role) {
        var option = document.createElement("option");
        option.value = role[0];
        option.textContent = role[1];
        option.selected = role[0] === entry.role;
        select.appendChild(option);
      });
      select.addEventListener("change", function () {
        entry.role = select.value;
        entry.chosen = true;  // the user's word beats the guess from the content
        checkSingles();
        render();
      });
      var remove = document.createElement("button");
      remove.type = "button";
      remove.className = "link remove";
      remove.textContent = "Remove";
      remove.setAttribute("aria-label", "Remove " + entry.path);
      remove.addEventListener("click", function () { entries.splice(index, 1); checkSingles(); render(); });
      item.appendChild(name);
      item.appendChild(size);
      item.appendChild(select);
      item.appendChild(remove);
      if (entry.note || entry.problem) {
        var note = document.createElement("span");
        note.className = entry.problem ? "file-problem" : "file-note";
        note.textContent = entry.problem || entry.note;
        item.appendChild(note);
      }
      list.appendChild(item);
    });
    if (fileInput) fileInput.setAttribute("aria-describedby", "logs-help");
  }

  function fromInput(input) {
    var items = [];
    for (var i = 0; i < input.files.length; i += 1) {
      var file = input.files[i];
      items.push({ file: file, path: file.webkitRelativePath || file.name });
    }
    input.value = "";  // the list below holds them now
    addFiles(items);
  }

  // A dropped folder is walked through the entries API, keeping each file's path inside it.
  function walk(entry, prefix, out) {
    return new Promise(function (resolve) {
      if (entry.isFile) {
        entry.file(function (file) { out.push({ file: file, path: prefix + file.name }); resolve(); }, function () { resolve(); });
      } else if (entry.isDirectory) {
        var reader = entry.createReader();
        var children = [];
        var readMore = function () {
          reader.readEntries(function (batch) {
            if (!batch.length) {
              Promise.all(children.map(function (child) { return walk(child, prefix + entry.name + "/", out); })).then(resolve);
              return;
            }
            children = children.concat(Array.prototype.slice.call(batch));
            readMore();
          }, function () { resolve(); });
        };
        readMore();
      } else {
        resolve();
      }
    });
  }

  if (fileInput) fileInput.addEventListener("change", function () { fromInput(fileInput); });
  if (folderInput) folderInput.addEventListener("change", function () { fromInput(folderInput); });
  if (zone) {
    ["dragenter", "dragover"].forEach(function (name) {
      zone.addEventListener(name, function (event) { event.preventDefault(); zone.classList.add("dragover"); });
    });
    ["dragleave", "drop"].forEach(function (name) {
      zone.addEventListener(name, function (event) { event.preventDefault(); zone.classList.remove("dragover"); });
    });
    zone.addEventListener("drop", function (event) {
      var transfer = event.dataTransfer;
      if (!transfer) return;
      var entriesApi = transfer.items && transfer.items.length && transfer.items[0].webkitGetAsEntry;
      if (entriesApi) {
        var found = [];
        var roots = [];
        for (var i = 0; i < transfer.items.length; i += 1) {
          var root = transfer.items[i].webkitGetAsEntry();
          if (root) roots.push(root);
        }
        if (roots.length) {
          Promise.all(roots.map(function (root) { return walk(root, "", found); })).then(function () { addFiles(found); });
          return;
        }
      }
      var items = [];
      for (var j = 0; j < transfer.files.length; j += 1) items.push({ file: transfer.files[j], path: transfer.files[j].name });
      addFiles(items);
    });
  }

  function clearErrors() {
    form.querySelectorAll(".field-error").forEach(function (node) { node.parentNode.removeChild(node); });
    form.querySelectorAll("[aria-invalid]").forEach(function (node) { node.removeAttribute("aria-invalid"); });
  }

  // Next to the button always; on the named field, and on the file whose name the message quotes.
  function showError(text, fieldName) {
    message.textContent = "";
    var note = document.createElement("span");
    note.className = "field-error";
    note.id = "upload-error";
    note.setAttribute("role", "alert");
    note.textContent = text;
    message.appendChild(note);
    var field = fieldName ? form.querySelector("[name='" + String(fieldName).replace(/[^\w-]/g, "") + "']") : null;
    if (field && field.type !== "hidden") {
      field.setAttribute("aria-invalid", "true");
      field.setAttribute("aria-describedby", "upload-error");
    }
    entries.forEach(function (entry) {
      var base = entry.path.split("/").pop();
      if (text.indexOf(entry.path) >= 0 || (base.length > 3 && text.indexOf(base) >= 0 && !entry.problem)) {
        entry.problem = text;
      }
    });
    render();
  }

  function readText(file) { return file.text ? file.text() : new Response(file).text(); }

  form.addEventListener("submit", function (event) {
    event.preventDefault();
    clearErrors();
    var blocking = entries.filter(function (entry) { return entry.problem && entry.role !== "ignore"; });
    if (blocking.length) {
      showError(blocking[0].path + ": " + blocking[0].problem, null);
      return;
    }
    var commands = entries.filter(function (entry) { return entry.role === "command"; });
    Promise.all(commands.map(function (entry) { return readText(entry.file); })).then(function (texts) {
      var data = new FormData(form);
      ["logs", "config", "data"].forEach(function (name) {
        var input = form.querySelector("input[type=file][name=" + name + "]");
        if (input && input.files.length === 0) data.delete(name);
      });
      if (texts.length && commandField && !commandField.value.trim()) data.set("command", texts.join("\n").trim());
      entries.forEach(function (entry) {
        if (entry.role === "log") {
          data.append("logs", entry.file, entry.path.split("/").pop());
          data.append("log_paths", entry.path);
        } else if (entry.role === "config" || entry.role === "data") {
          data.set(entry.role, entry.file, entry.path.split("/").pop());
        }
      });
      send(data);
    });
  });

  function send(data) {
    var button = form.querySelector("[type=submit]");
    if (button) button.disabled = true;
    progress.hidden = false;
    progress.value = 0;
    message.textContent = "Uploading…";
    var request = new XMLHttpRequest();
    request.open("POST", form.getAttribute("action") || window.location.href);
    request.setRequestHeader("Accept", "application/json");
    request.setRequestHeader("X-Requested-With", "XMLHttpRequest");
    request.upload.addEventListener("progress", function (progressEvent) {
      if (!progressEvent.lengthComputable) return;
      var percent = Math.round((progressEvent.loaded / progressEvent.total) * 100);
      progress.value = percent;
      message.textContent = "Uploading… " + percent + "% of " + humanSize(progressEvent.total);
    });
    request.addEventListener("load", function () {
      var body = null;
      try { body = JSON.parse(request.responseText); } catch (error) { body = null; }
      if (request.status >= 200 && request.status < 300 && body && body.url) {
        progress.value = 100;
        var notes = Array.isArray(body.notes) ? body.notes : [];
        if (!notes.length) {
          message.textContent = "Uploaded. Opening the incident…";
          window.location.assign(body.url);
          return;
        }
        // The server kept the upload but said something about some files: show it on them first.
        notes.forEach(function (note) {
          var said = String((note && (note.message || note.code)) || "");
          var file = String((note && note.file) || "");
          entries.forEach(function (entry) {
            if (file && (entry.path === file || entry.path.slice(-file.length - 1) === "/" + file)) entry.note = said;
          });
        });
        render();
        message.textContent = "Uploaded, with " + notes.length + " note" + (notes.length > 1 ? "s" : "") +
          " on the files above. Opening the incident…";
        window.setTimeout(function () { window.location.assign(body.url); }, 3000);
        return;
      }
      if (button) button.disabled = false;
      progress.hidden = true;
      var error = body && body.error ? body.error : null;
      showError(error && error.message ? "Upload refused: " + error.message : "The upload failed (HTTP " + request.status + ").",
        error && error.field);
    });
    request.addEventListener("error", function () {
      if (button) button.disabled = false;
      progress.hidden = true;
      showError("The connection failed during the upload. Try again.", null);
    });
    request.send(data);
  }
})();
