"use client";

import { useRouter } from "next/navigation";
import { useEffect, useState } from "react";

import { get, NotSignedIn } from "./api";

/** GETs `path` (again every `refreshMs` when given); sends a signed-out person to /signin. */
export function useApi<T>(path: string | null, refreshMs?: number) {
  const router = useRouter();
  const [data, setData] = useState<T | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [tick, setTick] = useState(0);
  useEffect(() => {
    if (!path) return;
    let live = true;
    get<T>(path)
      .then((d) => live && (setData(d), setError(null)))
      .catch((e) => {
        if (!live) return;
        if (e instanceof NotSignedIn) router.replace("/signin");
        else setError(String(e.message ?? e));
      });
    const timer = refreshMs ? setTimeout(() => setTick((t) => t + 1), refreshMs) : undefined;
    return () => {
      live = false;
      if (timer) clearTimeout(timer);
    };
  }, [path, refreshMs, tick, router]);
  return { data, error, reload: () => setTick((t) => t + 1) };
}
