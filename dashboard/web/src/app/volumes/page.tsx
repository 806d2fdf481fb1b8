"use client";

import Link from "next/link";

import { useApi } from "@/lib/use-api";

export default function Volumes() {
  const volumes = useApi<string[]>("/volumes");
  return (
    <section>
      <h1>Volumes</h1>
      <p className="note">
        Read-only here: make volumes and copy files with <code>levers9 volume</code>. The controlplane keeps no
        size or creation date per volume; a volume&apos;s page shows its files&apos; sizes and dates.
      </p>
      {volumes.error && <p className="error">{volumes.error}</p>}
      <table>
        <thead>
          <tr>
            <th>Name</th>
          </tr>
        </thead>
        <tbody>
          {(volumes.data ?? []).map((name) => (
            <tr key={name}>
              <td>
                <Link href={`/volumes/${encodeURIComponent(name)}`}>{name}</Link>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      {volumes.data?.length === 0 && <p className="note">No volume yet.</p>}
    </section>
  );
}
