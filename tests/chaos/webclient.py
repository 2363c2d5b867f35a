"""A tiny HTTP client for the chaos tests and the benchmark (standard library only)."""
from __future__ import annotations

import http.client
import json
import uuid


def multipart(files: list[tuple[str, str, bytes]], fields: dict | None = None) -> tuple[bytes, str]:
    boundary = f"chaos-{uuid.uuid4().hex}"
    parts = []
    for name, value in (fields or {}).items():
        parts.append(f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n{value}\r\n'.encode())
    for field, filename, content in files:
        parts.append(f'--{boundary}\r\nContent-Disposition: form-data; name="{field}"; filename="{filename}"\r\n'
                     f"Content-Type: application/octet-stream\r\n\r\n".encode() + content + b"\r\n")
    parts.append(f"--{boundary}--\r\n".encode())
    return b"".join(parts), f"multipart/form-data; boundary={boundary}"


def request(port: int, method: str, path: str, *, key: str | None = None, body: bytes | None = None,
            content_type: str | None = None, timeout: float = 30, host: str = "127.0.0.1") -> tuple[int, dict | str]:
    connection = http.client.HTTPConnection(host, port, timeout=timeout)
    headers = {"Accept": "application/json"}
    if key:
        headers["Authorization"] = f"Token {key}"
    if content_type:
        headers["Content-Type"] = content_type
    try:
        connection.request(method, path, body=body, headers=headers)
        response = connection.getresponse()
        raw = response.read()
    finally:
        connection.close()
    try:
        return response.status, json.loads(raw)
    except ValueError:
        return response.status, raw.decode(errors="replace")


def submit(port: int, key: str, log: bytes, name: str = "rank1.log", **fields) -> tuple[int, dict | str]:
    body, content_type = multipart([("files", name, log)], fields)
    return request(port, "POST", "/api/v1/incidents/", key=key, body=body, content_type=content_type)
