"use client";

import { type Capacity, type Worker, when } from "@/lib/api";
import { UsageBars } from "@/lib/plots";
import { useApi } from "@/lib/use-api";

type Pool = { name: string; cpu: [number, number]; memory: [number, number]; gpus: [number, number]; workers: number };

/** Capacity per pool, summed over its ready workers: [used, total]. */
function pools(workers: Worker[]): Pool[] {
  const byName = new Map<string, Pool>();
  const gpus = (c?: Capacity) => (c?.gpus ?? []).reduce((n, g) => n + (g.count ?? 0), 0);
  for (const w of workers) {
    if (w.status !== "ready") continue;
    const p = byName.get(w.pool) ?? { name: w.pool, cpu: [0, 0], memory: [0, 0], gpus: [0, 0], workers: 0 };
    const total = w.capacity;
    const free = w.free;
    p.workers += 1;
    p.cpu[1] += (total?.cpuMillicores ?? 0) / 1000;
    p.cpu[0] += ((total?.cpuMillicores ?? 0) - (free?.cpuMillicores ?? 0)) / 1000;
    p.memory[1] += (total?.memoryMib ?? 0) / 1024;
    p.memory[0] += ((total?.memoryMib ?? 0) - (free?.memoryMib ?? 0)) / 1024;
    p.gpus[1] += gpus(total);
    p.gpus[0] += gpus(total) - gpus(free);
    byName.set(w.pool, p);
  }
  return [...byName.values()].sort((a, b) => a.name.localeCompare(b.name));
}

export default function Workers() {
  const workers = useApi<Worker[]>("/workers", 5_000);
  const list = workers.data ?? [];
  const byPool = pools(list);
  return (
    <section>
      <h1>Workers and pools</h1>
      {workers.error && <p className="error">{workers.error}</p>}
      <div className="plots">
        <UsageBars
          title="CPU reserved per pool"
          bars={byPool.map((p) => ({ label: `${p.name} (${p.workers})`, used: p.cpu[0], total: p.cpu[1], unit: "cores" }))}
        />
        <UsageBars
          title="Memory reserved per pool"
          bars={byPool.map((p) => ({ label: p.name, used: p.memory[0], total: p.memory[1], unit: "GiB" }))}
        />
        {byPool.some((p) => p.gpus[1] > 0) && (
          <UsageBars
            title="GPUs reserved per pool"
            bars={byPool.map((p) => ({ label: p.name, used: p.gpus[0], total: p.gpus[1], unit: "GPUs" }))}
          />
        )}
      </div>
      <p className="note">
        Pools as their workers report them. Pool settings (sizes, GPU types, autoscaling) are not
        in the controlplane&apos;s API yet.
      </p>
      <table>
        <thead>
          <tr>
            <th>Worker</th>
            <th>Pool</th>
            <th>Host</th>
            <th>Runtime</th>
            <th>Status</th>
            <th>Free CPU / memory</th>
            <th>GPUs</th>
            <th>Last heartbeat</th>
          </tr>
        </thead>
        <tbody>
          {list.map((w) => (
            <tr key={w.workerId}>
              <td>{w.workerId}</td>
              <td>{w.pool}</td>
              <td>{w.hostname}</td>
              <td>{w.runtime}</td>
              <td className={`state-${w.status}`}>{w.status}</td>
              <td>
                {((w.free?.cpuMillicores ?? 0) / 1000).toFixed(1)} of {((w.capacity?.cpuMillicores ?? 0) / 1000).toFixed(1)} cores,{" "}
                {w.free?.memoryMib ?? 0} of {w.capacity?.memoryMib ?? 0} MiB
              </td>
              <td>{(w.capacity?.gpus ?? []).map((g) => `${g.count}× ${g.gpuType}`).join(", ") || "—"}</td>
              <td>{when(w.lastHeartbeatAt)}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}
