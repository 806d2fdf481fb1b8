"use client";

import { useEffect, useState } from "react";

import { API_BASE } from "./api";

type Line = { stream: string; text: string };

/** A container's log, live: server-sent events from the API until it exits. */
export function LogView({ containerId }: { containerId: string }) {
  const [lines, setLines] = useState<Line[]>([]);
  const [status, setStatus] = useState("connecting…");
  useEffect(() => {
    setLines([]);
    const source = new EventSource(`${API_BASE}/containers/${encodeURIComponent(containerId)}/logs`, {
      withCredentials: true,
    });
    source.addEventListener("open", () => setStatus("live"));
    source.addEventListener("log", (e) => {
      const line = JSON.parse((e as MessageEvent).data) as Line;
      setLines((all) => [...all.slice(-4999), line]);
    });
    source.addEventListener("exited", (e) => {
      const c = JSON.parse((e as MessageEvent).data);
      setStatus(`container ${c.state}${c.state === "exited" ? ` (exit ${c.exitCode ?? 0})` : ""}`);
      source.close();
    });
    source.addEventListener("failure", (e) => {
      setStatus(`error: ${JSON.parse((e as MessageEvent).data).error}`);
      source.close();
    });
    return () => source.close();
  }, [containerId]);
  return (
    <div>
      <p className="note">Log of container {containerId}: {status}</p>
      <pre className="log" data-testid="log">
        {lines.map((l, i) => (
          <span key={i} className={l.stream}>
            {l.text}
          </span>
        ))}
      </pre>
    </div>
  );
}
