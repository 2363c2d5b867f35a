// Upload page: drag and drop of many files (or an archive), XHR upload with a progress bar,
// and the server's JSON error shown next to the field it names. Without JS the form posts normally.
(function () {
  "use strict";
  var form = document.getElementById("upload-form");
  if (!form || !window.XMLHttpRequest || !window.FormData) return;
  var fileInput = form.querySelector("input[type=file][name=logs]");
  var zone = document.getElementById("drop-zone");
  var dropped = [];

  var status = document.createElement("div");
  status.className = "upload-status";
  status.setAttribute("aria-live", "polite");
  var progress = document.createElement("progress");
  progress.className = "upload-progress";
  progress.max = 100;
  progress.value = 0;
  progress.hidden = true;
  progress.setAttribute("aria-label", "Upload progress");
  var message = document.createElement("p");
  message.id = "upload-message";
  status.appendChild(progress);
  status.appendChild(message);
  var list = document.createElement("ul");
  list.className = "file-list";
  list.id = "upload-file-list";
  (zone || fileInput || form).insertAdjacentElement("afterend", list);
  form.appendChild(status);

  function humanSize(bytes) {
    var units = ["B", "KB", "MB", "GB"];
    var index = 0;
    while (bytes >= 1024 && index < units.length - 1) { bytes /= 1024; index += 1; }
    return (index ? bytes.toFixed(1) : bytes) + " " + units[index];
  }

  function chosenFiles() {
    var files = [];
    if (fileInput && fileInput.files) {
      for (var i = 0; i < fileInput.files.length; i += 1) files.push(fileInput.files[i]);
    }
    return files.concat(dropped);
  }

  function showFiles() {
    while (list.firstChild) list.removeChild(list.firstChild);
    chosenFiles().forEach(function (file) {
      var item = document.createElement("li");
      item.textContent = file.name + " (" + humanSize(file.size) + ")";
      list.appendChild(item);
    });
  }

  function clearErrors() {
    form.querySelectorAll(".field-error").forEach(function (node) { node.parentNode.removeChild(node); });
    form.querySelectorAll("[aria-invalid]").forEach(function (node) { node.removeAttribute("aria-invalid"); });
  }

  function showError(text, fieldName) {
    var field = fieldName ? form.querySelector("[name='" + String(fieldName).replace(/[^\w-]/g, "") + "']") : null;
    var note = document.createElement("span");
    note.className = "field-error";
    note.setAttribute("role", "alert");
    note.textContent = text;
    if (field) {
      note.id = "error-" + field.name;
      field.setAttribute("aria-invalid", "true");
      field.setAttribute("aria-describedby", note.id);
      field.insertAdjacentElement("afterend", note);
    } else {
      message.textContent = "";
      message.appendChild(note);
    }
  }

  if (fileInput) fileInput.addEventListener("change", showFiles);
  if (zone) {
    ["dragenter", "dragover"].forEach(function (name) {
      zone.addEventListener(name, function (event) { event.preventDefault(); zone.classList.add("dragover"); });
    });
    ["dragleave", "drop"].forEach(function (name) {
      zone.addEventListener(name, function (event) { event.preventDefault(); zone.classList.remove("dragover"); });
    });
    zone.addEventListener("drop", function (event) {
      var files = event.dataTransfer && event.dataTransfer.files;
      if (!files) return;
      for (var i = 0; i < files.length; i += 1) dropped.push(files[i]);
      showFiles();
    });
  }

  form.addEventListener("submit", function (event) {
    event.preventDefault();
    clearErrors();
    var data = new FormData(form);
    dropped.forEach(function (file) { data.append("logs", file, file.name); });
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
        message.textContent = "Uploaded. Opening the incident…";
        window.location.assign(body.url);
        return;
      }
      if (request.status >= 200 && request.status < 400 && request.responseURL && request.responseURL !== window.location.href) {
        window.location.assign(request.responseURL);
        return;
      }
      if (button) button.disabled = false;
      progress.hidden = true;
      var error = body && body.error ? body.error : null;
      message.textContent = "";
      showError(error && error.message ? error.message : "The upload failed (HTTP " + request.status + ").", error && error.field);
    });
    request.addEventListener("error", function () {
      if (button) button.disabled = false;
      progress.hidden = true;
      message.textContent = "";
      showError("The connection failed during the upload. Try again.", null);
    });
    request.send(data);
  });
})();
