"use client";

import Link from "next/link";
import { usePathname, useRouter } from "next/navigation";
import { type ReactNode, useEffect, useState } from "react";

import { loadSession, post, type SessionInfo } from "@/lib/api";

const NAV: [string, string][] = [
  ["/", "Overview"],
  ["/tasks", "Tasks"],
  ["/apps", "Apps"],
  ["/deployments", "Deployments"],
  ["/containers", "Containers"],
  ["/workers", "Workers & pools"],
  ["/volumes", "Volumes"],
  ["/secrets", "Secrets"],
  ["/tokens", "Workspace & tokens"],
];

/** The frame of every page: navigation, who is signed in, the dev sign-in warning. */
export function Shell({ children }: { children: ReactNode }) {
  const path = usePathname();
  const router = useRouter();
  const [session, setSession] = useState<SessionInfo | null | undefined>(undefined);
  const [error, setError] = useState<string | null>(null);
  const signinPage = path === "/signin";

  useEffect(() => {
    if (signinPage) return;
    loadSession()
      .then((s) => {
        setSession(s);
        if (!s) router.replace("/signin");
      })
      .catch((e) => setError(String(e.message ?? e)));
  }, [signinPage, router]);

  if (signinPage) return <main>{children}</main>;
  return (
    <>
      <header>
        <strong>levers9</strong>
        <nav>
          {NAV.map(([href, label]) => (
            <Link key={href} href={href} className={path === href ? "here" : ""}>
              {label}
            </Link>
          ))}
        </nav>
        {session && (
          <span className="who">
            {session.email}{" "}
            <button
              onClick={() => post("/auth/logout").then(() => router.replace("/signin"))}
            >
              Sign out
            </button>
          </span>
        )}
      </header>
      {session?.method === "dev" && (
        <p className="warning" role="alert">
          Development sign-in: nobody checked who you are. Never leave it on where others can
          reach this dashboard.
        </p>
      )}
      {error && <p className="error">The API could not be reached: {error}</p>}
      <main>{session ? children : <p>Loading…</p>}</main>
    </>
  );
}
