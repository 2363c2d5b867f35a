"""Slow clients against the real nginx (deploy/nginx.conf) in front of gunicorn
(deploy/gunicorn.conf.py with one worker of 4 threads): sockets that send their headers a byte at
a time and POSTs that promise more body than they send do not stop the product for anyone else,
and nginx drops the stalled ones."""
import socket
import time

import pytest

from tests.chaos.rig import Rig, wait_until
from tests.chaos.webclient import request

pytestmark = [pytest.mark.integration, pytest.mark.slow]
SLOW_HEADERS = 24
SHORT_BODIES = 12


@pytest.fixture(scope="module")
def proxied(postgres_database, tmp_path_factory):
    rig = Rig(postgres_database, tmp_path_factory.mktemp("slow"), engine_delay_s=0)
    try:
        rig.start_redis()
        rig.start_web()
        rig.start_nginx()
        yield rig
    finally:
        rig.stop_all()


def open_slow_clients(port: int) -> list[socket.socket]:
    sockets = []
    for _ in range(SLOW_HEADERS):
        sock = socket.create_connection(("127.0.0.1", port))
        sock.sendall(b"GET /accounts/login/ HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
        sockets.append(sock)
    for _ in range(SHORT_BODIES):
        sock = socket.create_connection(("127.0.0.1", port))
        sock.sendall(b"POST /api/v1/incidents/ HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: text/plain\r\n"
                     b"Content-Length: 10000000\r\n\r\n" + b"x" * 1024)
        sockets.append(sock)
    return sockets


def closed_by_server(sock: socket.socket) -> bool:
    sock.settimeout(0.05)
    try:
        data = sock.recv(4096)
    except TimeoutError:
        return False
    except OSError:
        return True
    return data == b"" or data.startswith(b"HTTP/1.1 408")


@pytest.mark.django_db(transaction=True)
def test_slow_clients_do_not_stop_the_product_for_others(proxied):
    sockets = open_slow_clients(proxied.nginx_port)
    try:
        for sock in sockets[:SLOW_HEADERS]:  # a byte now and then keeps each one "active"
            sock.sendall(b"a")
        slowest = 0.0
        for _ in range(20):
            started = time.monotonic()
            code, _ = request(proxied.nginx_port, "GET", "/accounts/login/", timeout=10)
            slowest = max(slowest, time.monotonic() - started)
            assert code == 200
        assert slowest < 2.0, f"a normal request took {slowest:.2f} s"
        # nginx gives up on the stalled ones (headers: 10 s, body: 20 s between reads); gunicorn never saw them.
        wait_until(lambda: all(closed_by_server(sock) for sock in sockets[:SLOW_HEADERS]), timeout=20)
        assert "POST /api/v1/incidents/" not in proxied.web.log_text()
    finally:
        for sock in sockets:
            sock.close()
