"""A minimal Chrome DevTools Protocol client over the standard library (no browser download,
no third-party package): starts headless Chromium, drives one page, collects its console."""

from __future__ import annotations

import base64
import json
import os
import socket
import struct
import subprocess
import time
import urllib.request
from pathlib import Path


class Browser:
    """Headless Chromium with a DevTools endpoint on 127.0.0.1 and one page to drive."""

    def __init__(self, chromium: str, profile: Path, timeout: float = 60.0) -> None:
        self.timeout = timeout
        self.proc = subprocess.Popen(
            [
                chromium,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--no-first-run",
                "--disable-extensions",
                "--remote-debugging-address=127.0.0.1",
                "--remote-debugging-port=0",
                f"--user-data-dir={profile}",
                "--window-size=1280,900",
                "about:blank",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        port_file = profile / "DevToolsActivePort"
        deadline = time.monotonic() + timeout
        while not port_file.exists() or not port_file.read_text().strip():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.close()
                raise RuntimeError(f"Chromium did not open its DevTools port ({chromium})")
            time.sleep(0.1)
        port = int(port_file.read_text().split()[0])
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=timeout) as r:
            page = next(t for t in json.load(r) if t["type"] == "page")
        self._connect(page["webSocketDebuggerUrl"])
        self._id = 0
        self.events: list[dict] = []
        for domain in ("Page", "Runtime", "Log"):
            self.call(f"{domain}.enable")

    # -- WebSocket (RFC 6455), text frames only
    def _connect(self, url: str) -> None:
        rest = url.split("://", 1)[1]
        hostport, path = rest.split("/", 1)
        host, port = hostport.split(":")
        self.sock = socket.create_connection((host, int(port)), timeout=self.timeout)
        key = base64.b64encode(os.urandom(16)).decode()
        self.sock.sendall(
            (
                f"GET /{path} HTTP/1.1\r\nHost: {hostport}\r\nUpgrade: websocket\r\n"
                f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n"
                "Sec-WebSocket-Version: 13\r\n\r\n"
            ).encode()
        )
        head = b""
        while b"\r\n\r\n" not in head:
            head += self.sock.recv(1)
        if b" 101 " not in head.split(b"\r\n", 1)[0]:
            raise RuntimeError(f"DevTools refused the WebSocket: {head[:200]!r}")

    def _send(self, text: str) -> None:
        data = text.encode()
        mask = os.urandom(4)
        n = len(data)
        header = bytes([0x81])
        if n < 126:
            header += bytes([0x80 | n])
        elif n < 1 << 16:
            header += bytes([0x80 | 126]) + struct.pack(">H", n)
        else:
            header += bytes([0x80 | 127]) + struct.pack(">Q", n)
        masked = bytes(b ^ mask[i % 4] for i, b in enumerate(data))
        self.sock.sendall(header + mask + masked)

    def _exact(self, n: int) -> bytes:
        buf = b""
        while len(buf) < n:
            chunk = self.sock.recv(n - len(buf))
            if not chunk:
                raise RuntimeError("DevTools closed the connection")
            buf += chunk
        return buf

    def _recv(self) -> dict:
        message = b""
        while True:
            b0, b1 = self._exact(2)
            n = b1 & 0x7F
            if n == 126:
                n = struct.unpack(">H", self._exact(2))[0]
            elif n == 127:
                n = struct.unpack(">Q", self._exact(8))[0]
            message += self._exact(n)
            if b0 & 0x80:
                return json.loads(message)

    def call(self, method: str, **params) -> dict:
        """Send one command and return its result; events that arrive meanwhile are kept."""
        self._id += 1
        self._send(json.dumps({"id": self._id, "method": method, "params": params}))
        while True:
            msg = self._recv()
            if msg.get("id") == self._id:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                return msg.get("result", {})
            self.events.append(msg)

    def evaluate(self, expression: str):
        result = self.call("Runtime.evaluate", expression=expression, returnByValue=True)
        return result.get("result", {}).get("value")

    def open(self, url: str) -> None:
        """Navigate and wait for the load event."""
        self.call("Page.navigate", url=url)
        deadline = time.monotonic() + self.timeout
        while self.evaluate("document.readyState") != "complete":
            if time.monotonic() > deadline:
                raise TimeoutError(f"{url} did not finish loading")
            time.sleep(0.1)

    def wait_for(self, expression: str, timeout: float = 30.0):
        """Poll a JavaScript expression until it is truthy; its value, or None at the timeout."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if value := self.evaluate(expression):
                return value
            time.sleep(0.2)
        return None

    def console_problems(self) -> list[str]:
        """Console errors and warnings, uncaught exceptions and failed loads seen so far."""
        out = []
        for e in self.events:
            method, p = e.get("method"), e.get("params", {})
            if method == "Runtime.exceptionThrown":
                out.append(f"exception: {p['exceptionDetails'].get('text')}")
            elif method == "Runtime.consoleAPICalled" and p.get("type") in ("error", "warning"):
                args = " ".join(str(a.get("value", a.get("description"))) for a in p["args"])
                out.append(f"console.{p['type']}: {args}")
            elif method == "Log.entryAdded" and p["entry"].get("level") in ("error", "warning"):
                entry = p["entry"]
                out.append(f"log {entry['level']}: {entry.get('text')} {entry.get('url', '')}")
        return out

    def screenshot(self, path: Path) -> None:
        data = self.call("Page.captureScreenshot", format="png")["data"]
        path.write_bytes(base64.b64decode(data))

    def close(self) -> None:
        try:
            self.sock.close()
        except Exception:  # never connected
            pass
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
