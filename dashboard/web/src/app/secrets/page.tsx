"use client";

import { type Secret, when } from "@/lib/api";
import { useApi } from "@/lib/use-api";

export default function Secrets() {
  const secrets = useApi<Secret[]>("/secrets");
  return (
    <section>
      <h1>Secrets</h1>
      <p className="note">Names only: values never leave the controlplane. Set them with <code>levers9 secret create</code>.</p>
      {secrets.error && <p className="error">{secrets.error}</p>}
      <table>
        <thead>
          <tr>
            <th>Name</th>
            <th>Created</th>
            <th>Updated</th>
          </tr>
        </thead>
        <tbody>
          {(secrets.data ?? []).map((s) => (
            <tr key={s.name}>
              <td><code>{s.name}</code></td>
              <td>{when(s.createdAt)}</td>
              <td>{when(s.updatedAt)}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}
