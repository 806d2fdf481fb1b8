"use client";

import { useParams } from "next/navigation";
import { useState } from "react";

import { post, type Task, when } from "@/lib/api";
import { LogView } from "@/lib/log-view";
import { TaskEvents } from "@/lib/task-events";
import { useApi } from "@/lib/use-api";

const FINAL = new Set(["complete", "error", "timeout", "cancelled"]);

export default function TaskDetail() {
  const { id } = useParams<{ id: string }>();
  const task = useApi<Task>(`/tasks/${encodeURIComponent(id)}`, 2_000);
  const [error, setError] = useState<string | null>(null);
  const t = task.data;
  return (
    <section>
      <h1>Task {id}</h1>
      {(task.error || error) && <p className="error">{task.error ?? error}</p>}
      {t && (
        <>
          <dl>
            <dt>Function</dt>
            <dd>{t.functionName}</dd>
            <dt>State</dt>
            <dd className={`state-${t.state}`} data-testid="task-state">{t.state}</dd>
            <dt>Attempts</dt>
            <dd>{t.attempts}</dd>
            <dt>Message</dt>
            <dd>{t.message || "—"}</dd>
            <dt>Worker</dt>
            <dd>{t.workerId || "—"}</dd>
            <dt>Created</dt>
            <dd>{when(t.createdAt)}</dd>
            <dt>Started</dt>
            <dd>{when(t.startedAt)}</dd>
            <dt>Ended</dt>
            <dd>{when(t.endedAt)}</dd>
          </dl>
          <p className="note">
            The controlplane keeps the count of attempts and the latest one&apos;s container; the
            retries of a running task show below as they happen, but a stored per-attempt history
            is not in its API yet.
          </p>
          {!FINAL.has(t.state) && (
            <button onClick={() => post(`/tasks/${encodeURIComponent(id)}/cancel`).then(task.reload, (e) => setError(String(e.message)))}>
              Cancel task
            </button>
          )}
          <h2>Output and outcome</h2>
          <TaskEvents taskId={id} />
          <h2>Container log</h2>
          {t.containerId ? <LogView containerId={t.containerId} /> : <p className="note">Not placed in a container yet.</p>}
        </>
      )}
    </section>
  );
}
