"use client";

import Link from "next/link";

import { type Deployment, when } from "@/lib/api";
import { useApi } from "@/lib/use-api";

export default function Deployments() {
  const deployments = useApi<Deployment[]>("/deployments");
  return (
    <section>
      <h1>Deployments</h1>
      <p className="note">
        The functions of each app&apos;s current version, as <code>levers9 deploy</code> made it; callers find them with{" "}
        <code>levers9.Function.lookup(app, function)</code>.
      </p>
      {deployments.error && <p className="error">{deployments.error}</p>}
      <table data-testid="deployments">
        <thead>
          <tr>
            <th>App</th>
            <th>Function</th>
            <th>Version</th>
            <th>Stub</th>
            <th>Deployed</th>
          </tr>
        </thead>
        <tbody>
          {(deployments.data ?? []).map((d) => (
            <tr key={`${d.appName}/${d.functionName}`}>
              <td>
                <code>{d.appName}</code>
              </td>
              <td>{d.functionName}</td>
              <td>{d.version}</td>
              <td>
                <Link href={`/stubs/${d.stubId}`}>{d.stubId}</Link>
              </td>
              <td>{when(d.createdAt)}</td>
            </tr>
          ))}
        </tbody>
      </table>
      {deployments.data?.length === 0 && (
        <p className="note">
          No app is deployed in this workspace: <code>levers9 deploy path/file.py</code> deploys one.
        </p>
      )}
    </section>
  );
}
