// Task throughput and latency over time, from the latest tasks the API lists.

import type { Task } from "./api";
import type { Point } from "./plots";

const FINAL = new Set(["complete", "error", "timeout", "cancelled"]);

/** Tasks ended per bucket, and the median and slowest run time per bucket (seconds). */
export function taskSeries(tasks: Task[], bucketMs: number) {
  const buckets = new Map<number, number[]>();
  for (const t of tasks) {
    if (!FINAL.has(t.state) || !t.endedAt) continue;
    const end = Date.parse(t.endedAt);
    const start = Date.parse(t.startedAt || t.createdAt);
    const key = Math.floor(end / bucketMs) * bucketMs;
    const list = buckets.get(key) ?? [];
    list.push(Number.isFinite(start) ? Math.max(0, (end - start) / 1000) : 0);
    buckets.set(key, list);
  }
  const keys = [...buckets.keys()].sort((a, b) => a - b);
  const throughput: Point[] = [];
  const median: Point[] = [];
  const slowest: Point[] = [];
  for (const k of keys) {
    const d = (buckets.get(k) ?? []).sort((a, b) => a - b);
    throughput.push({ x: k, y: d.length });
    median.push({ x: k, y: d[Math.floor((d.length - 1) / 2)] });
    slowest.push({ x: k, y: d[d.length - 1] });
  }
  return { throughput, median, slowest };
}
