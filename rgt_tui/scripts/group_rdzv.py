# rgt-tui group preflight's rendezvous check, box side (issue 41): run by the box's
# python3 on stdin through group_check.sh (`python3 - MODE ADDR PORT TOKEN COUNT SECONDS`).
# Standard library only, Python 3.6+, never raises. It prints one or two lines
# "RGT-RDZV <json>"; services/queue/group/preflight.py reads them.
#   listen: rank 0 listens on ADDR:PORT (as torchrun's c10d store will), hands TOKEN to
#           each box that connects, and ends after COUNT connections or SECONDS;
#   connect: another rank dials ADDR:PORT until SECONDS pass (refused: rank 0 may not
#           listen yet, so it tries again) and says whether the answer was TOKEN.
# TOKEN names this check's listener (not a secret): something else answering on the port
# is told apart from rank 0.
import errno
import json
import socket
import sys
import time


def emit(data):
    sys.stdout.write("RGT-RDZV " + json.dumps(data) + "\n")
    sys.stdout.flush()


def text(exc):
    return (type(exc).__name__ + ": " + str(exc))[:300]


def addresses():
    # Rank 0's IPv4 addresses, the fix's candidates (what `ip -4 addr` would list).
    found = []
    try:
        for info in socket.getaddrinfo(socket.gethostname(), None, socket.AF_INET):
            if info[4][0] not in found:
                found.append(info[4][0])
    except Exception:
        pass
    return found[:16]


def listen(addr, port, token, count, seconds):
    try:
        family, kind, proto, _, where = socket.getaddrinfo(addr, port, 0, socket.SOCK_STREAM)[0]
    except Exception as exc:
        emit({"bound": False, "errno": "EAI", "error": text(exc), "addresses": addresses()})
        return
    server = socket.socket(family, kind, proto)
    try:
        server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        server.bind(where)
        server.listen(16)
    except OSError as exc:
        name = errno.errorcode.get(exc.errno or 0, "")
        emit({"bound": False, "errno": name, "error": text(exc), "addresses": addresses()})
        server.close()
        return
    emit({"bound": True, "addresses": addresses()})
    server.settimeout(0.5)
    deadline = time.time() + seconds
    accepted = 0
    while accepted < count and time.time() < deadline:
        try:
            conn, _ = server.accept()
        except socket.timeout:  # noqa: UP041 (an alias only from 3.10: the box may be older)
            continue
        except OSError:
            break
        try:
            conn.sendall((token + "\n").encode())
            accepted += 1
        except OSError:
            pass
        finally:
            conn.close()
    server.close()
    emit({"accepted": accepted})


def connect(addr, port, token, seconds):
    deadline = time.time() + seconds
    why, said = "timeout", ""
    while time.time() < deadline:
        left = max(deadline - time.time(), 0.1)
        try:
            conn = socket.create_connection((addr, port), timeout=min(3.0, left))
        except socket.gaierror as exc:
            emit({"reached": False, "why": "resolve", "error": text(exc)})
            return
        except socket.timeout:  # noqa: UP041 (an alias only from 3.10: the box may be older)
            why, said = "timeout", ""
            continue
        except ConnectionRefusedError as exc:
            # Rank 0's listener may not be up yet: try again until the deadline.
            why, said = "refused", text(exc)
            time.sleep(0.2)
            continue
        except OSError as exc:
            why, said = "error", text(exc)
            time.sleep(0.2)
            continue
        answer = b""
        try:
            conn.settimeout(min(3.0, max(deadline - time.time(), 0.5)))
            while not answer.endswith(b"\n") and len(answer) < 256:
                chunk = conn.recv(256)
                if not chunk:
                    break
                answer += chunk
        except OSError:
            pass
        finally:
            conn.close()
        if answer.strip() == token.encode():
            emit({"reached": True})
        else:
            emit({"reached": False, "why": "other", "error": ""})
        return
    emit({"reached": False, "why": why, "error": said})


def main(argv):
    try:
        mode, addr, port, token, count, seconds = argv[1:7]
        if mode == "listen":
            listen(addr, int(port), token, int(count), float(seconds))
        else:
            connect(addr, int(port), token, float(seconds))
    except Exception as exc:  # never a traceback: the answer says what went wrong
        emit({"bound": False, "reached": False, "why": "error", "errno": "", "error": text(exc)})


main(sys.argv)
