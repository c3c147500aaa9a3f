"""FastStream (aiokafka) driver: one subscriber with max_workers.

Unordered workloads: max_workers=N with the default ack policy (ACK_FIRST, aiokafka auto-commit), which
FastStream runs as ConcurrentDefaultSubscriber: N tasks handling messages of a partition concurrently.
Per-key order required: FastStream has no per-key mode; the ordered setting is max_workers=N with
AckPolicy.ACK (manual commit), which it runs as ConcurrentBetweenPartitionsSubscriber: concurrency across
partitions, each partition one message at a time.

Same spec, bookkeeping and result as drivers/common.mjs (PEER_SPEC in the environment, one JSON line out).
"""
import asyncio
import json
import os
import sys
import time

from faststream import AckPolicy
from faststream.kafka import KafkaBroker

spec = json.loads(os.environ["PEER_SPEC"])
N = spec["n"]
TOTAL = N + spec.get("tail", 0)


def peak_rss_kb():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return 0


class Tracker:
    def __init__(self):
        self.last_seq = {}
        self.seen = bytearray(TOTAL)
        self.ids = []
        self.lat = []
        self.handled = self.distinct = self.violations = self.backlog = 0
        self.first = self.last = 0.0
        self.done = asyncio.Event()
        self.keep_ids = spec["mode"] != "measure"
        self.idle_handle = None
        self.loop = asyncio.get_event_loop()
        if spec["mode"] == "drain":
            self.idle_handle = self.loop.call_later(spec.get("firstWaitMs", 60000) / 1000, self.done.set)

    def begin(self, v):
        if v["id"] >= N:
            self.lat.append(time.time() * 1000 - v["ts"])
        key = v["id"] % spec["keys"]
        prev = self.last_seq.get(key)
        if prev is not None and v["seq"] <= prev:
            self.violations += 1
        self.last_seq[key] = v["seq"]

    def end(self, v):
        self.handled += 1
        i = v["id"]
        if i < N:
            now = time.perf_counter()
            if self.backlog == 0:
                self.first = now
            self.last = now
            self.backlog += 1
            if self.backlog == N and spec["mode"] == "measure":
                sys.stdout.write('{"backlog":true}\n')
                sys.stdout.flush()
        if not self.seen[i]:
            self.seen[i] = 1
            self.distinct += 1
        if self.keep_ids:
            self.ids.append(i)
        mode = spec["mode"]
        if mode == "measure" and self.handled == TOTAL:
            self.done.set()
        elif mode == "stopAt" and self.handled == spec["stopAt"]:
            self.done.set()
        elif mode == "drain":
            self.idle_handle.cancel()
            self.idle_handle = self.loop.call_later(spec["idleMs"] / 1000, self.done.set)

    def result(self):
        lat = sorted(self.lat)
        pct = lambda p: lat[min(len(lat) - 1, int(p / 100 * len(lat)))] if lat else None
        r = {
            "system": "faststream",
            "handled": self.handled, "distinct": self.distinct, "violations": self.violations,
            "rate": (self.backlog - 1) / (self.last - self.first) if self.backlog > 1 and self.last > self.first else 0,
            "p50Ms": pct(50), "p99Ms": pct(99), "peakRssKb": peak_rss_kb(),
        }
        if self.keep_ids:
            r["ids"] = self.ids
        return r


async def main():
    t = Tracker()
    broker = KafkaBroker(spec["brokers"], client_id="peer-faststream", logger=None)
    sleep_s = spec["sleepMs"] / 1000
    options = dict(
        group_id=spec["group"], auto_offset_reset="earliest", fetch_max_wait_ms=100,
        max_workers=spec["concurrency"],
    )
    if spec["ordered"]:
        options["ack_policy"] = AckPolicy.ACK

    @broker.subscriber(spec["topic"], **options)
    async def handler(body: dict):
        t.begin(body)
        if sleep_s > 0:
            await asyncio.sleep(sleep_s)
        t.end(body)

    await broker.start()
    sys.stdout.write('{"ready":true}\n')
    sys.stdout.flush()
    await t.done.wait()
    await broker.stop()
    sys.stdout.write(json.dumps(t.result()) + "\n")
    sys.stdout.flush()


asyncio.run(main())
