"use client";

import { type FormEvent, useState } from "react";

import { post, type Token, when, type Workspace } from "@/lib/api";
import { useApi } from "@/lib/use-api";

export default function Tokens() {
  const workspace = useApi<Workspace>("/workspace");
  const tokens = useApi<Token[]>("/tokens");
  const [description, setDescription] = useState("");
  const [secret, setSecret] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);

  async function create(event: FormEvent) {
    event.preventDefault();
    try {
      const made = await post<{ secret: string }>("/tokens", { description });
      setSecret(made.secret);
      setDescription("");
      tokens.reload();
    } catch (e) {
      setError(String((e as Error).message));
    }
  }

  async function revoke(id: string) {
    try {
      await post(`/tokens/${encodeURIComponent(id)}/revoke`);
      tokens.reload();
    } catch (e) {
      setError(String((e as Error).message));
    }
  }

  const w = workspace.data;
  return (
    <section>
      <h1>Workspace</h1>
      {w && (
        <dl>
          <dt>Name</dt>
          <dd>{w.name}</dd>
          <dt>Id</dt>
          <dd><code>{w.id}</code></dd>
          <dt>Created</dt>
          <dd>{when(w.createdAt)}</dd>
        </dl>
      )}
      <h2>Tokens</h2>
      {(tokens.error || error) && <p className="error">{tokens.error ?? error}</p>}
      <form onSubmit={create}>
        <input value={description} onChange={(e) => setDescription(e.target.value)} placeholder="description" />{" "}
        <button type="submit">Create a workspace token</button>
      </form>
      {secret && (
        <p className="warning">
          The new token, shown this once: <code>{secret}</code>
        </p>
      )}
      <table>
        <thead>
          <tr>
            <th>Id</th>
            <th>Type</th>
            <th>Description</th>
            <th>Created</th>
            <th>Last used</th>
            <th>Revoked</th>
            <th />
          </tr>
        </thead>
        <tbody>
          {(tokens.data ?? []).map((t) => (
            <tr key={t.id}>
              <td><code>{t.id}</code></td>
              <td>{t.tokenType}</td>
              <td>{t.description}</td>
              <td>{when(t.createdAt)}</td>
              <td>{when(t.lastUsedAt)}</td>
              <td>{when(t.revokedAt)}</td>
              <td>{!t.revokedAt && <button onClick={() => revoke(t.id)}>Revoke</button>}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}
