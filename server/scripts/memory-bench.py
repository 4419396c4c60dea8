#!/usr/bin/env python3
"""Peak memory of `redline serve` under million-element filings (issue 14, part 2).

    server/scripts/memory-bench.py PATH/TO/redline [N_ELEMENTS]

Starts the binary on a fresh SQLite data dir, then sends one `createChange` whose
`capture.elements` holds N (default 1,000,000) empty objects, then eight at once, and
prints the server's VmRSS before and its VmHWM (peak RSS, /proc/PID/status) after each,
with the statuses it answered and the slowest `getSession` another client saw meanwhile.
"""
import json, os, subprocess, sys, tempfile, threading, time, urllib.request, urllib.error

binary = os.path.abspath(sys.argv[1])
n = int(sys.argv[2]) if len(sys.argv) > 2 else 1_000_000
data = tempfile.mkdtemp(prefix="redline-mem-")
run = lambda *a: subprocess.run([binary, *a, "--data", data], check=True, capture_output=True, text=True).stdout
run("project", "add", "demo")
stage = json.loads(run("stage", "add", "--project", "demo", "--branch", "main", "--url", "https://demo.example.com", "--json"))
token = json.loads(run("token", "create", "--project", "demo", "--scope", "changes:project:read,changes:project:file", "--name", "bench", "--json"))["token"]
server = subprocess.Popen([binary, "serve", "--addr", "127.0.0.1:0", "--data", data], stdout=subprocess.PIPE, text=True)
base = server.stdout.readline().strip().rsplit(" ", 1)[1]

def status(field):
    with open(f"/proc/{server.pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) // 1024  # MiB

def post(name, body):
    req = urllib.request.Request(f"{base}/rpc/{name}", data=body, method="POST",
                                 headers={"authorization": f"Bearer {token}", "content-type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=600) as r:
            return r.status, r.read()[:120]
    except urllib.error.HTTPError as e:
        return e.code, e.read()[:120]
    except (ConnectionError, urllib.error.URLError) as e:
        return "closed", str(e)[:80]

body = ('{"stageId":"%s","title":"t","capture":{"elements":[%s{}]}}' % (stage["stageId"], "{}," * (n - 1))).encode()
post("getSession", b"{}")
print(f"binary {binary}\nbody {len(body):,} bytes ({n:,} empty elements)")
print(f"idle: VmRSS {status('VmRSS')} MiB, VmHWM {status('VmHWM')} MiB")
print("one:", post("createChange", body), f"VmHWM {status('VmHWM')} MiB")

slowest, done = [0.0], threading.Event()
def probe():
    while not done.is_set():
        t = time.perf_counter(); post("getSession", b"{}"); slowest[0] = max(slowest[0], time.perf_counter() - t)
        time.sleep(0.005)
results = []
threads = [threading.Thread(target=lambda: results.append(post("createChange", body))) for _ in range(8)]
p = threading.Thread(target=probe); p.start()
for t in threads: t.start()
for t in threads: t.join()
done.set(); p.join()
print("eight at once:", sorted(str(r[0]) for r in results), f"VmHWM {status('VmHWM')} MiB,",
      f"slowest getSession meanwhile {slowest[0] * 1000:.0f} ms")
print("answer:", results[0][1])
server.terminate(); server.wait()
