"use client";

import { useParams } from "next/navigation";

import { type Container, when } from "@/lib/api";
import { LogView } from "@/lib/log-view";
import { useApi } from "@/lib/use-api";

export default function ContainerDetail() {
  const { id } = useParams<{ id: string }>();
  const container = useApi<Container>(`/containers/${encodeURIComponent(id)}`, 5_000);
  const c = container.data;
  return (
    <section>
      <h1>Container {id}</h1>
      {container.error && <p className="error">{container.error}</p>}
      {c && (
        <dl>
          <dt>Image</dt>
          <dd><code>{c.image}</code></dd>
          <dt>Args</dt>
          <dd><code>{(c.args ?? []).join(" ") || "—"}</code></dd>
          <dt>State</dt>
          <dd className={`state-${c.state}`}>{c.state}</dd>
          <dt>Message</dt>
          <dd>{c.message || "—"}</dd>
          <dt>Pool / worker</dt>
          <dd>{c.pool} / {c.workerId || "—"}</dd>
          <dt>Secrets</dt>
          <dd>{(c.secrets ?? []).join(", ") || "—"}</dd>
          <dt>Created</dt>
          <dd>{when(c.createdAt)}</dd>
        </dl>
      )}
      <h2>Logs</h2>
      <LogView containerId={id} />
    </section>
  );
}
