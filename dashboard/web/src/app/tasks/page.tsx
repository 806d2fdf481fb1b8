"use client";

import Link from "next/link";
import { useState } from "react";

import { type Task, when } from "@/lib/api";
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
      <table>
        <thead>
          <tr>
            <th>Task</th>
            <th>Function</th>
            <th>State</th>
            <th>Attempts</th>
            <th>Created</th>
            <th>Ended</th>
          </tr>
        </thead>
        <tbody>
          {(tasks.data ?? []).map((t) => (
            <tr key={t.taskId}>
              <td>
                <Link href={`/tasks/${t.taskId}`}>{t.taskId}</Link>
              </td>
              <td>{t.functionName}</td>
              <td className={`state-${t.state}`}>{t.state}</td>
              <td>{t.attempts}</td>
              <td>{when(t.createdAt)}</td>
              <td>{when(t.endedAt)}</td>
            </tr>
          ))}
        </tbody>
      </table>
      {tasks.data?.length === 0 && <p className="note">No task matches.</p>}
    </section>
  );
}
