"""Story: alice reads the whole log of a rank around an evidence line, a page at a time."""
import gzip
import io
import zipfile

from django.urls import reverse

from jobs import logfiles
from tests.pages.factories import add_artifact, node_log


def viewer(artifact, **params):
    return reverse("jobs:artifact_log", args=[artifact.incident_id, artifact.pk]), params


def big_log(lines=1000):
    return "".join(f"[rank{n % 4}]: line number {n}\n" for n in range(1, lines + 1))


def test_it_serves_a_page_of_lines_around_the_requested_line(alice_client, alpha, make_incident):
    artifact = add_artifact(make_incident(alpha), "big.log", big_log())
    url, params = viewer(artifact, line=500)
    response = alice_client.get(url, params)
    page = response.context["page"]
    numbers = [number for number, _, _ in page.lines]
    assert numbers[0] == 480 and len(numbers) == logfiles.PAGE_LINES
    assert page.has_previous and page.has_next
    body = response.content.decode()
    assert 'class="ln hit" id="L500"' in body
    assert "line number 1000" not in body


def test_it_pages_forward_and_back(alice_client, alpha, make_incident):
    artifact = add_artifact(make_incident(alpha), "big.log", big_log())
    url, _ = viewer(artifact)
    first = alice_client.get(url).context["page"]
    assert first.lines[0][0] == 1 and first.next_start == 201
    last = alice_client.get(url, {"start": 901}).context["page"]
    assert last.lines[-1][0] == 1000 and not last.has_next


def test_it_filters_one_rank(alice_client, alpha, make_incident):
    artifact = add_artifact(make_incident(alpha), "big.log", big_log())
    url, _ = viewer(artifact)
    page = alice_client.get(url, {"rank": 2}).context["page"]
    assert all(text.startswith("[rank2]:") for _, text, _ in page.lines)
    assert page.lines[0][0] == 2  # numbers stay the file's


def test_it_searches_the_whole_file(alice_client, alpha, make_incident):
    artifact = add_artifact(make_incident(alpha), "node17.log", node_log(extra_lines=500))
    url, _ = viewer(artifact)
    response = alice_client.get(url, {"q": "outofmemoryerror"})
    results = response.context["results"]
    assert [number for number, _ in results.matches] == [12]
    assert "line 12" in response.content.decode()


def test_it_reads_gzip_and_zip_members(alice_client, alpha, make_incident):
    incident = make_incident(alpha)
    gz = add_artifact(incident, "rank0.log.gz", gzip.compress(b"hello from gzip\n"))
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("logs/0/stdout.log", "hello from zip\n")
    zipped = add_artifact(incident, "logs.zip", buffer.getvalue())

    assert "hello from gzip" in alice_client.get(viewer(gz)[0]).content.decode()
    listing = alice_client.get(viewer(zipped)[0]).content.decode()
    assert "logs/0/stdout.log" in listing
    member = alice_client.get(viewer(zipped)[0], {"member": "logs/0/stdout.log"}).content.decode()
    assert "hello from zip" in member
    assert alice_client.get(viewer(zipped)[0], {"member": "nope"}).status_code == 200


def test_it_lists_and_reads_tar_members_and_their_gz_members(alice_client, alpha, make_incident):
    import tarfile

    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for name, data in (("logs/1/stderr.log", b"hello from tar\n"),
                           ("logs/2/stderr.log.gz", gzip.compress(b"hello from a gz in a tar\n"))):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    tarred = add_artifact(make_incident(alpha), "logs.tar.gz", buffer.getvalue())

    listing = alice_client.get(viewer(tarred)[0]).content.decode()
    assert "logs/1/stderr.log" in listing and "logs/2/stderr.log.gz" in listing
    assert "hello from tar" in alice_client.get(viewer(tarred)[0], {"member": "logs/1/stderr.log"}).content.decode()
    inner = alice_client.get(viewer(tarred)[0], {"member": "logs/2/stderr.log.gz"}).content.decode()
    assert "hello from a gz in a tar" in inner


def test_a_zip_with_more_members_than_allowed_lists_none(alice_client, alpha, make_incident, settings):
    from jobs import logfiles

    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for index in range(5):
            archive.writestr(f"rank{index}.log", "x\n")
    zipped = add_artifact(make_incident(alpha), "many.zip", buffer.getvalue())
    assert len(logfiles.archive_members(zipped)) == 5
    assert logfiles.archive_members(zipped, max_members=4) == []  # counted from the end record, not parsed


def test_it_escapes_log_lines_and_file_names(alice_client, alpha, make_incident):
    artifact = add_artifact(make_incident(alpha), "<script>alert('name')</script>.log",
                            "<script>alert('log')</script>\n<a href=\"javascript:alert(1)\">x</a>\n")
    body = alice_client.get(viewer(artifact)[0]).content.decode()
    assert "<script>alert" not in body
    assert "&lt;script&gt;alert(&#x27;log&#x27;)" in body
    assert 'href="javascript:' not in body


def test_download_is_an_attachment(alice_client, alpha, make_incident):
    artifact = add_artifact(make_incident(alpha), "log.txt", "<html>not rendered</html>\n")
    response = alice_client.get(reverse("jobs:artifact_download", args=[artifact.incident_id, artifact.pk]))
    assert response.status_code == 200
    assert response["Content-Disposition"].startswith("attachment")
    assert response["Content-Type"] == "application/octet-stream"
    assert b"".join(response.streaming_content) == b"<html>not rendered</html>\n"


def test_another_teams_logs_are_404(charlie_client, alpha, make_incident):
    artifact = add_artifact(make_incident(alpha), "log.txt", "secret\n")
    assert charlie_client.get(viewer(artifact)[0]).status_code == 404
    assert charlie_client.get(
        reverse("jobs:artifact_download", args=[artifact.incident_id, artifact.pk])).status_code == 404


def test_an_artifact_of_another_incident_is_404(alice_client, alpha, make_incident):
    artifact = add_artifact(make_incident(alpha), "log.txt", "x\n")
    other = make_incident(alpha)
    assert alice_client.get(reverse("jobs:artifact_log", args=[other.pk, artifact.pk])).status_code == 404


def test_search_continues_after_the_first_matches(alice_client, alpha, make_incident):
    artifact = add_artifact(make_incident(alpha), "big.log", big_log())
    first = logfiles.search(artifact, "line number", limit=10)
    assert len(first.matches) == 10 and not first.complete and first.next_from == 11
    more = logfiles.search(artifact, "line number", from_line=first.next_from, limit=10)
    assert more.matches[0][0] == 11


def test_search_and_context_stop_at_their_byte_budget(alice_client, alpha, make_incident):
    artifact = add_artifact(make_incident(alpha), "big.log", big_log(5000))
    result = logfiles.search(artifact, "line number 4999", byte_budget=10_000)
    assert not result.complete and result.matches == []
    assert logfiles.context_lines(artifact, 4000, byte_budget=10_000) is None
    windows = logfiles.contexts(artifact, [10, 12, 900], radius=2)
    assert [n for n, _ in windows[10]] == [8, 9, 10, 11, 12]
    assert [n for n, _ in windows[900]] == [898, 899, 900, 901, 902]
