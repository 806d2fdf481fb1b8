"use client";

import Link from "next/link";
import { useParams } from "next/navigation";
import { useState } from "react";

import { post, type TaskDetail as Detail, when } from "@/lib/api";
import { LogView } from "@/lib/log-view";
import { TaskEvents } from "@/lib/task-events";
import { useApi } from "@/lib/use-api";

const FINAL = new Set(["complete", "error", "timeout", "cancelled"]);

export default function TaskDetail() {
  const { id } = useParams<{ id: string }>();
  const detail = useApi<Detail>(`/tasks/${encodeURIComponent(id)}`, 2_000);
  const [error, setError] = useState<string | null>(null);
  const t = detail.data?.task;
  const attempts = detail.data?.attempts ?? [];
  return (
    <section>
      <h1>Task {id}</h1>
      {(detail.error || error) && <p className="error">{detail.error ?? error}</p>}
      {t && (
        <>
          <dl>
            <dt>Function</dt>
            <dd>
              <Link href={`/stubs/${t.stubId}`}>{t.functionName}</Link>
            </dd>
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
          {!FINAL.has(t.state) && (
            <button onClick={() => post(`/tasks/${encodeURIComponent(id)}/cancel`).then(detail.reload, (e) => setError(String(e.message)))}>
              Cancel task
            </button>
          )}
          <h2>Attempts</h2>
          {attempts.length === 0 ? (
            <p className="note">No attempt has started yet.</p>
          ) : (
            <table data-testid="attempts">
              <thead>
                <tr>
                  <th>#</th>
                  <th>Worker</th>
                  <th>Container</th>
                  <th>Started</th>
                  <th>Ended</th>
                  <th>Outcome</th>
                  <th>Reason</th>
                </tr>
              </thead>
              <tbody>
                {attempts.map((a, i) => (
                  <tr key={`${a.attempt}-${i}`}>
                    <td>{a.attempt}</td>
                    <td>{a.workerId || "—"}</td>
                    <td>
                      {a.containerId ? <Link href={`/containers/${a.containerId}`}>{a.containerId}</Link> : "—"}
                    </td>
                    <td>{when(a.startedAt)}</td>
                    <td>{when(a.endedAt)}</td>
                    <td className={`state-${a.outcome}`}>{a.outcome || "running"}</td>
                    <td>{a.message || "—"}</td>
                  </tr>
                ))}
              </tbody>
            </table>
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
