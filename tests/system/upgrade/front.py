# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at
#
#      http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS, WITHOUT
# WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied. See the
# License for the specific language governing permissions and limitations
# under the License.

"""The load balancer in front of the APIs during a rolling upgrade.

Clients connect only here, as they would to HAProxy's frontend, and each
connection is relayed to an API taken in turn from the ordered list of
backends; the upgrade changes that list as it rolls. A backend that
refuses the connection, or closes or resets it before answering a byte,
is skipped for the next one and the request bytes are sent again, as
HAProxy's ``option redispatch`` with ``retry-on conn-failure
empty-response`` would: that is how a stopping API's queued connections
reach the others. A request is never sent again once a byte of its
answer came back.

What reaches a client anyway (no backend took the connection, or one
broke it after answering) is counted with the time it happened, so that
the test can tell whether it fell within the stop of an API.
"""

import collections
import itertools
import selectors
import socket
import threading
import time

CONNECT_TIMEOUT = 5
IDLE_TIMEOUT = 120
"""Seconds a relayed connection may stay silent both ways (a request
waits at most gunicorn's 60 s timeout)."""
CHUNK = 65536


class Front:
    """A threaded TCP relay on a loopback port of its own: one thread
    per client connection. ``backends`` is a list of ``(name, port)``.
    """

    def __init__(self, backends=()):
        self.listener = socket.create_server(('127.0.0.1', 0), backlog=256)
        self.port = self.listener.getsockname()[1]
        self.url = 'http://127.0.0.1:%d' % self.port
        self.lock = threading.Lock()
        self.backends = list(backends)
        self.turn = itertools.count()
        self.served = collections.Counter()
        self.redispatched = []
        self.failed = []
        self.closing = False
        self.thread = threading.Thread(target=self._accept, name='front',
                                       daemon=True)
        self.thread.start()

    def set_backends(self, backends):
        """Route new connections to ``backends`` from now on."""
        with self.lock:
            self.backends = list(backends)

    def _order(self):
        """The backends, starting at the next in turn."""
        with self.lock:
            backends = list(self.backends)
        if not backends:
            return []
        start = next(self.turn) % len(backends)
        return backends[start:] + backends[:start]

    def _accept(self):
        while not self.closing:
            try:
                client, _address = self.listener.accept()
            except OSError:
                return  # closed by stop()
            threading.Thread(target=self._serve, args=(client,),
                             daemon=True).start()

    def _serve(self, client):
        sent = b''
        try:
            for name, port in self._order():
                try:
                    backend = socket.create_connection(
                        ('127.0.0.1', port), timeout=CONNECT_TIMEOUT)
                except OSError as exc:
                    self._note(self.redispatched, name, 'connect: %s' % exc)
                    continue
                with backend:
                    backend.settimeout(None)
                    answered, sent, error, left = _relay(client, backend,
                                                         sent)
                if answered:
                    with self.lock:
                        self.served[name] += 1
                    if error:
                        self._note(self.failed, name,
                                   'broken after answering: %s' % error)
                    return
                if left:
                    return  # the client left before asking anything
                self._note(self.redispatched, name,
                           'no answer: %s' % (error or 'closed'))
            self._note(self.failed, None, 'no backend answered')
        finally:
            client.close()

    def _note(self, events, backend, reason):
        with self.lock:
            events.append({'at': time.monotonic(), 'backend': backend,
                           'reason': reason})

    def stop(self):
        self.closing = True
        self.listener.close()


def _relay(client, backend, sent):
    """Relay both ways until the backend is done; ``sent`` (the request
    bytes a previous backend did not answer) goes first.

    Returns ``(answered, sent, error, left)``: whether the backend
    answered a byte, the request bytes it was sent (to send again to the
    next backend when it did not answer), the error that ended the
    relay, if one did, and whether the client closed its side before
    asking anything.
    """
    answered = left = False
    with selectors.DefaultSelector() as selector:
        try:
            if sent:
                backend.sendall(sent)
            selector.register(client, selectors.EVENT_READ)
            selector.register(backend, selectors.EVENT_READ)
            while True:
                ready = selector.select(IDLE_TIMEOUT)
                if not ready:
                    return (answered, sent, 'idle for %ds' % IDLE_TIMEOUT,
                            left)
                for key, _events in ready:
                    data = key.fileobj.recv(CHUNK)
                    if key.fileobj is backend:
                        if not data:
                            return answered, sent, None, left
                        answered = True
                        client.sendall(data)
                    elif data:
                        if not answered:
                            sent += data
                        backend.sendall(data)
                    else:
                        # The client has sent all it will: tell the
                        # backend, and read its answer to the end.
                        left = not sent
                        selector.unregister(client)
                        backend.shutdown(socket.SHUT_WR)
        except OSError as exc:
            return answered, sent, str(exc) or type(exc).__name__, left
