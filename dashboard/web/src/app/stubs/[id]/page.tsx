"use client";

import Link from "next/link";
import { useParams } from "next/navigation";

import { type StubDetail, when } from "@/lib/api";
import { resources } from "@/lib/resources";
import { TaskTable } from "@/lib/task-table";
import { useApi } from "@/lib/use-api";

export default function Stub() {
  const { id } = useParams<{ id: string }>();
  const detail = useApi<StubDetail>(`/stubs/${encodeURIComponent(id)}`, 5_000);
  const s = detail.data?.stub;
  const c = s?.config;
  const tasks = detail.data?.recentTasks ?? [];
  return (
    <section>
      <h1>Stub {id}</h1>
      {detail.error && <p className="error">{detail.error}</p>}
      {s && (
        <dl data-testid="stub">
          <dt>Function</dt>
          <dd>{s.functionName}</dd>
          <dt>App</dt>
          <dd>
            <code>{s.modulePath}</code>
          </dd>
          <dt>Created</dt>
          <dd>{when(s.createdAt)}</dd>
          <dt>Image</dt>
          <dd>
            <code>{c?.image}</code>
          </dd>
          <dt>Resources</dt>
          <dd>{resources(c)}</dd>
          <dt>Pool</dt>
          <dd>{c?.pool}</dd>
          <dt>Retries</dt>
          <dd>{c?.retries}</dd>
          <dt>Timeout</dt>
          <dd>{c?.timeoutSeconds} s</dd>
          <dt>Keep warm</dt>
          <dd>{c?.keepWarmSeconds} s</dd>
          <dt>Concurrency</dt>
          <dd>{c?.concurrency}</dd>
          <dt>Max containers</dt>
          <dd>{c?.maxContainers}</dd>
          <dt>Secrets</dt>
          <dd>{c?.secrets.length ? c.secrets.map((n) => <code key={n}>{n} </code>) : "—"}</dd>
          <dt>Environment</dt>
          <dd>{c && Object.keys(c.env).length ? Object.keys(c.env).sort().map((k) => <code key={k}>{k} </code>) : "—"}</dd>
          <dt>Volumes</dt>
          <dd>
            {c?.volumes.length
              ? c.volumes.map((v) => (
                  <span key={v.name}>
                    <Link href={`/volumes/${encodeURIComponent(v.name)}`}>{v.name}</Link> at <code>{v.mountPath}</code>{" "}
                  </span>
                ))
              : "—"}
          </dd>
        </dl>
      )}
      <h2>Recent tasks</h2>
      <p className="note">Its tasks among the workspace&apos;s latest {detail.data?.tasksLookedAt ?? "…"}.</p>
      <TaskTable tasks={tasks} testId="stub-tasks" />
    </section>
  );
}
