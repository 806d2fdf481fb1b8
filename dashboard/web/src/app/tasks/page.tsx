"use client";

import { useState } from "react";

import { type Task } from "@/lib/api";
import { TaskTable } from "@/lib/task-table";
import { useApi } from "@/lib/use-api";

const STATES = ["", "pending", "running", "retry", "complete", "error", "timeout", "cancelled"];

export default function Tasks() {
  const [state, setState] = useState("");
  const [fn, setFn] = useState("");
  const query = new URLSearchParams({ limit: "200" });
  if (state) query.set("state", state);
  if (fn) query.set("function", fn);
  const tasks = useApi<Task[]>(`/tasks?${query}`, 3_000);
  return (
    <section>
      <h1>Tasks</h1>
      <div className="filters">
        <label>
          State{" "}
          <select value={state} onChange={(e) => setState(e.target.value)}>
            {STATES.map((s) => (
              <option key={s} value={s}>
                {s || "any"}
              </option>
            ))}
          </select>
        </label>
        <label>
          Function <input value={fn} onChange={(e) => setFn(e.target.value)} placeholder="name" />
        </label>
      </div>
      {tasks.error && <p className="error">{tasks.error}</p>}
      <TaskTable tasks={tasks.data ?? []} />
      {tasks.data?.length === 0 && <p className="note">No task matches.</p>}
    </section>
  );
}
