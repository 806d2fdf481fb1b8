"use client";

import Link from "next/link";
import { useParams, useSearchParams } from "next/navigation";
import { Suspense } from "react";

import { API_BASE, bytes, type FileEntry, when } from "@/lib/api";
import { useApi } from "@/lib/use-api";

/** The directory `path` of a volume; files download through the API. */
function Browser() {
  const { name } = useParams<{ name: string }>();
  const path = (useSearchParams().get("path") ?? "").replace(/^\/+|\/+$/g, "");
  const volume = encodeURIComponent(name);
  const entries = useApi<FileEntry[]>(`/volumes/${volume}/files?${new URLSearchParams({ path })}`);
  const parts = path ? path.split("/") : [];
  const here = (p: string) => `/volumes/${volume}${p ? `?${new URLSearchParams({ path: p })}` : ""}`;
  return (
    <section>
      <h1>
        Volume <code>{name}</code>
      </h1>
      <p data-testid="volume-path">
        <Link href={here("")}>{name}</Link>
        {parts.map((part, i) => (
          <span key={i}>
            {" / "}
            <Link href={here(parts.slice(0, i + 1).join("/"))}>{part}</Link>
          </span>
        ))}
      </p>
      {entries.error && <p className="error">{entries.error}</p>}
      <table>
        <thead>
          <tr>
            <th>Name</th>
            <th>Size</th>
            <th>Modified</th>
          </tr>
        </thead>
        <tbody>
          {(entries.data ?? []).map((e) => {
            const base = e.path.split("/").filter(Boolean).pop() ?? e.path;
            return (
              <tr key={e.path}>
                <td>
                  {e.isDir ? (
                    <Link href={here(e.path)}>{base}/</Link>
                  ) : (
                    <a href={`${API_BASE}/volumes/${volume}/file?${new URLSearchParams({ path: e.path })}`}>{base}</a>
                  )}
                </td>
                <td>{e.isDir ? "—" : bytes(e.size)}</td>
                <td>{when(e.modifiedAt)}</td>
              </tr>
            );
          })}
        </tbody>
      </table>
      {entries.data?.length === 0 && <p className="note">Empty.</p>}
    </section>
  );
}

export default function Volume() {
  return (
    <Suspense>
      <Browser />
    </Suspense>
  );
}
