"use client";

import type { Task, Workspace } from "@/lib/api";
import { LinePlot } from "@/lib/plots";
import { taskSeries } from "@/lib/task-stats";
import { useApi } from "@/lib/use-api";

const MINUTE = 60_000;

export default function Overview() {
  const workspace = useApi<Workspace>("/workspace");
  const tasks = useApi<Task[]>("/tasks?limit=1000", 10_000);
  const series = taskSeries(tasks.data ?? [], MINUTE);
  return (
    <section>
      <h1>{workspace.data?.name ?? "Workspace"}</h1>
      {tasks.error && <p className="error">{tasks.error}</p>}
      <div className="plots">
        <LinePlot
          title="Tasks ended per minute"
          unit="tasks"
          series={[{ name: "ended", points: series.throughput, color: "#0969da" }]}
        />
        <LinePlot
          title="Task run time per minute"
          unit="s"
          series={[
            { name: "median", points: series.median, color: "#2da44e" },
            { name: "slowest", points: series.slowest, color: "#cf222e" },
          ]}
        />
      </div>
      <p className="note">From the latest {tasks.data?.length ?? 0} tasks.</p>
    </section>
  );
}
