#!/usr/bin/env python3
"""A two-member replica set that answers just enough of the wire protocol
for the MongoDB C driver to pick a member, for test_target_mongoc: which
member each command reached.

  fake_replset.py PORTS_FILE LOG_FILE

Listens on two free ports of 127.0.0.1, the first the primary, the second
a secondary (both named in every hello), writes "PRIMARY SECONDARY" to
PORTS_FILE, and appends "<port> <command> <its argument>" to LOG_FILE for every command
but the driver's own (hello, isMaster, endSessions).  find answers one
document {_id: 1}; listIndexes the _id index; anything else {ok: 1}.
Runs until killed.  Uses pymongo's bson only (no server).
"""
import datetime
import socket
import socketserver
import struct
import sys
import threading

import bson

OP_REPLY, OP_QUERY, OP_MSG = 1, 2004, 2013

ports = []
log_lock = threading.Lock()


def hello(me):
    primary = me == ports[0]
    hosts = ["127.0.0.1:%d" % p for p in ports]
    doc = {
        "helloOk": True,
        "ismaster": primary,
        "isWritablePrimary": primary,
        "secondary": not primary,
        "setName": "rs0",
        "setVersion": 1,
        "hosts": hosts,
        "primary": hosts[0],
        "me": "127.0.0.1:%d" % me,
        "maxBsonObjectSize": 16 * 1024 * 1024,
        "maxMessageSizeBytes": 48000000,
        "maxWriteBatchSize": 100000,
        "localTime": datetime.datetime.now(datetime.timezone.utc),
        "logicalSessionTimeoutMinutes": 30,
        "minWireVersion": 0,
        "maxWireVersion": 13,
        "lastWrite": {"lastWriteDate": datetime.datetime.now(datetime.timezone.utc)},
        "ok": 1.0,
    }
    if primary:
        doc["electionId"] = bson.ObjectId("7fffffff0000000000000001")
    return doc


def answer(me, cmd, log):
    name = next(iter(cmd))
    if name.lower() in ("hello", "ismaster"):
        return hello(me)
    if name != "endSessions":
        with log_lock:
            log.write("%d %s %s\n" % (me, name, cmd[name]))
            log.flush()
    ns = "%s.%s" % (cmd.get("$db", "test"), cmd[name])
    if name == "find":
        return {"cursor": {"firstBatch": [{"_id": 1}], "id": bson.Int64(0), "ns": ns}, "ok": 1.0}
    if name == "listIndexes":
        return {"cursor": {"firstBatch": [{"v": 2, "key": {"_id": 1}, "name": "_id_"}],
                           "id": bson.Int64(0), "ns": ns}, "ok": 1.0}
    return {"ok": 1.0}


class Member(socketserver.BaseRequestHandler):
    def read(self, n):
        data = b""
        while len(data) < n:
            chunk = self.request.recv(n - len(data))
            if not chunk:
                raise EOFError
            data += chunk
        return data

    def handle(self):
        me = self.server.server_address[1]
        log = self.server.log
        try:
            while True:
                length, request_id, _, opcode = struct.unpack("<iiii", self.read(16))
                body = self.read(length - 16)
                if opcode == OP_QUERY:
                    # flags, the collection name, skip, limit, the query
                    at = body.index(b"\0", 4) + 1 + 8
                    cmd = bson.decode(body[at:at + struct.unpack("<i", body[at:at + 4])[0]])
                    if "$query" in cmd:
                        cmd = cmd["$query"]
                    reply = bson.encode(answer(me, cmd, log))
                    out = struct.pack("<iqii", 0, 0, 0, 1) + reply
                    self.request.sendall(struct.pack("<iiii", 16 + len(out), 0, request_id, OP_REPLY) + out)
                elif opcode == OP_MSG:
                    # flagBits, then sections: kind 0 (the body) and kind 1 (document sequences)
                    at = 4
                    cmd = None
                    while at < len(body):
                        kind = body[at]
                        size = struct.unpack("<i", body[at + 1:at + 5])[0]
                        if kind == 0:
                            cmd = bson.decode(body[at + 1:at + 1 + size])
                        at += 1 + size
                    reply = bson.encode(answer(me, cmd, log))
                    out = struct.pack("<I", 0) + b"\0" + reply
                    self.request.sendall(struct.pack("<iiii", 16 + len(out), 0, request_id, OP_MSG) + out)
                else:
                    return
        except (EOFError, ConnectionError):
            return


class Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True


def main():
    ports_file, log_file = sys.argv[1], sys.argv[2]
    log = open(log_file, "a")
    servers = []
    for _ in range(2):
        s = Server(("127.0.0.1", 0), Member)
        s.log = log
        servers.append(s)
        ports.append(s.server_address[1])
    for s in servers:
        threading.Thread(target=s.serve_forever, daemon=True).start()
    with open(ports_file + ".tmp", "w") as f:
        f.write("%d %d\n" % tuple(ports))
    import os
    os.rename(ports_file + ".tmp", ports_file)
    threading.Event().wait()


if __name__ == "__main__":
    main()
