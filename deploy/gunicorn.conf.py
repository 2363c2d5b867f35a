"""gunicorn settings for production: threaded workers with sane timeouts, behind deploy/nginx.conf.

    gunicorn -c deploy/gunicorn.conf.py config.wsgi:application

nginx buffers request bodies and drops slow clients, so a thread is only busy while Django works;
gthread workers let one worker serve many requests at once (page reads wait on PostgreSQL, not CPU).
Every knob is an environment variable.
"""
import io
import os

from gunicorn.http.body import Body

bind = os.environ.get("TRIAGE_BIND", "0.0.0.0:8000")
worker_class = "gthread"
# Two processes a core: uploads are CPU-bound Python (parsing, masking), and separate processes
# share the cores more fairly than threads under one GIL (16 clients x 5 MB: p99 0.78 s with 4x4
# on 2 cores, 1.04 s with 2x4; after the one-pass upload work, three runs each on the shared
# machine: 4x4 p99 0.72/0.96/2.16 s, 2x4 1.25/1.28/1.47 s). Threads cover requests that wait on
# PostgreSQL.
workers = int(os.environ.get("TRIAGE_WEB_WORKERS", str(max(2, min(8, 2 * (os.cpu_count() or 1))))))
threads = int(os.environ.get("TRIAGE_WEB_THREADS", "4"))
# A request that takes longer than this is stuck (uploads are already buffered by nginx).
timeout = int(os.environ.get("TRIAGE_WEB_TIMEOUT", "120"))
graceful_timeout = 30
keepalive = 5
max_requests = int(os.environ.get("TRIAGE_WEB_MAX_REQUESTS", "2000"))  # recycle workers against slow leaks
max_requests_jitter = 200
limit_request_line = 8190
limit_request_fields = 100
accesslog = os.environ.get("TRIAGE_WEB_ACCESS_LOG", "-")
forwarded_allow_ips = os.environ.get("TRIAGE_FORWARDED_ALLOW_IPS", "*")


class _BulkBody(Body):
    """gunicorn's request body with a read() that takes what it needs from the socket reader in one
    go. gunicorn's own Body.read(n) gathers n bytes 1 KiB at a time, copying its buffer at every
    step: reading a 5 MB upload cost ~14 ms of CPU, against ~3 ms here (Django reads the body in
    64 KiB pieces). readline() and iteration are gunicorn's own."""

    def read(self, size=None):
        size = self.getsize(size)
        if size == 0:
            return b""
        buffered = self.buf.getvalue()  # what readline() left over
        self.buf = io.BytesIO()
        if len(buffered) >= size:
            self.buf.write(buffered[size:])
            return buffered[:size]
        return buffered + self.reader.read(size - len(buffered))


def pre_request(worker, req):
    worker.log.debug("%s %s", req.method, req.path)
    if type(req.body) is Body:  # chunked and length-delimited bodies alike: their readers read(n) whole
        req.body = _BulkBody(req.body.reader)
