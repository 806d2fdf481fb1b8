"use client";

import { useEffect, useState } from "react";

import { API_BASE } from "./api";

type Entry = { kind: "output" | "retrying" | "result"; stream?: string; text: string };

/** A task's own output, retries and outcome, live from the API's task events. */
export function TaskEvents({ taskId }: { taskId: string }) {
  const [entries, setEntries] = useState<Entry[]>([]);
  const [traceback, setTraceback] = useState("");
  useEffect(() => {
    setEntries([]);
    const source = new EventSource(`${API_BASE}/tasks/${encodeURIComponent(taskId)}/events`, {
      withCredentials: true,
    });
    const add = (entry: Entry) => setEntries((all) => [...all.slice(-4999), entry]);
    source.addEventListener("output", (e) => {
      const o = JSON.parse((e as MessageEvent).data);
      add({ kind: "output", stream: o.stream, text: o.text });
    });
    source.addEventListener("retrying", (e) => {
      const r = JSON.parse((e as MessageEvent).data);
      add({ kind: "retrying", text: `— attempt ${r.attempt} starts: ${r.reason}\n` });
    });
    source.addEventListener("result", (e) => {
      const r = JSON.parse((e as MessageEvent).data);
      add({ kind: "result", text: `— ${r.state}${r.message ? `: ${r.message}` : ""}\n` });
      setTraceback(r.traceback ?? "");
      source.close();
    });
    source.addEventListener("failure", (e) => {
      add({ kind: "result", text: `— ${JSON.parse((e as MessageEvent).data).error}\n` });
      source.close();
    });
    return () => source.close();
  }, [taskId]);
  return (
    <div>
      <pre className="log" data-testid="task-events">
        {entries.map((entry, i) => (
          <span key={i} className={entry.stream ?? entry.kind}>
            {entry.text}
          </span>
        ))}
      </pre>
      {traceback && (
        <>
          <h3>Traceback</h3>
          <pre className="log stderr">{traceback}</pre>
        </>
      )}
    </div>
  );
}
