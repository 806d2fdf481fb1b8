"use client";

import Link from "next/link";

import { type Stub, when } from "@/lib/api";
import { resources } from "@/lib/resources";
import { useApi } from "@/lib/use-api";

/** Stubs by the file they were defined in, newest first within each. */
function byApp(stubs: Stub[]): [string, Stub[]][] {
  const apps = new Map<string, Stub[]>();
  for (const s of stubs) apps.set(s.modulePath, [...(apps.get(s.modulePath) ?? []), s]);
  return [...apps.entries()].sort(([a], [b]) => a.localeCompare(b));
}

export default function Apps() {
  const stubs = useApi<Stub[]>("/stubs?limit=500");
  return (
    <section>
      <h1>Apps</h1>
      <p className="note">
        An app is the file its functions were defined in. Each change of a function&apos;s code or settings makes a new
        stub, so a function can be listed more than once (newest first).
      </p>
      {stubs.error && <p className="error">{stubs.error}</p>}
      {byApp(stubs.data ?? []).map(([app, list]) => (
        <div key={app} data-testid="app">
          <h2>
            <code>{app}</code>
          </h2>
          <table>
            <thead>
              <tr>
                <th>Function</th>
                <th>Stub</th>
                <th>Image</th>
                <th>Resources</th>
                <th>Pool</th>
                <th>Created</th>
              </tr>
            </thead>
            <tbody>
              {list.map((s) => (
                <tr key={s.stubId}>
                  <td>{s.functionName}</td>
                  <td>
                    <Link href={`/stubs/${s.stubId}`}>{s.stubId}</Link>
                  </td>
                  <td>
                    <code>{s.config?.image ?? "—"}</code>
                  </td>
                  <td>{resources(s.config)}</td>
                  <td>{s.config?.pool ?? "—"}</td>
                  <td>{when(s.createdAt)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      ))}
      {stubs.data?.length === 0 && <p className="note">No function has run in this workspace yet.</p>}
    </section>
  );
}
