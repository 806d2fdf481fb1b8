"use client";

import Link from "next/link";

import { type Container, when } from "@/lib/api";
import { useApi } from "@/lib/use-api";

export default function Containers() {
  const containers = useApi<Container[]>("/containers", 5_000);
  return (
    <section>
      <h1>Containers</h1>
      {containers.error && <p className="error">{containers.error}</p>}
      <table>
        <thead>
          <tr>
            <th>Container</th>
            <th>Image</th>
            <th>Pool</th>
            <th>State</th>
            <th>GPU</th>
            <th>Created</th>
          </tr>
        </thead>
        <tbody>
          {(containers.data ?? []).map((c) => (
            <tr key={c.containerId}>
              <td>
                <Link href={`/containers/${c.containerId}`}>{c.containerId}</Link>
              </td>
              <td>
                <code>{c.image}</code>
              </td>
              <td>{c.pool}</td>
              <td className={`state-${c.state}`}>
                {c.state}
                {c.state === "exited" ? ` (${c.exitCode ?? 0})` : ""}
                {c.oomKilled ? ", out of memory" : ""}
              </td>
              <td>{c.gpuCount ? `${c.gpuCount}× ${c.gpuType}` : "—"}</td>
              <td>{when(c.createdAt)}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}
