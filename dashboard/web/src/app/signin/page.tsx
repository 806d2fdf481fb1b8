"use client";

import { useRouter, useSearchParams } from "next/navigation";
import { type FormEvent, Suspense, useEffect, useState } from "react";

import { API_BASE, get, remember, type SessionInfo, type SigninConfig } from "@/lib/api";

function Signin() {
  const router = useRouter();
  const refused = useSearchParams().get("error");
  const [config, setConfig] = useState<SigninConfig | null>(null);
  const [email, setEmail] = useState("");
  const [error, setError] = useState<string | null>(refused);

  useEffect(() => {
    get<SigninConfig>("/auth/config")
      .then(setConfig)
      .catch((e) => setError(String(e.message ?? e)));
  }, []);

  async function devSignin(event: FormEvent) {
    event.preventDefault();
    const response = await fetch(`${API_BASE}/auth/dev`, {
      method: "POST",
      credentials: "include",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ email }),
    });
    const body = await response.json().catch(() => ({}));
    if (!response.ok) {
      setError(body.error ?? response.statusText);
      return;
    }
    remember(body as SessionInfo);
    router.replace("/");
  }

  return (
    <section>
      <h1>Sign in to levers9</h1>
      {error && <p className="error">{error}</p>}
      {config?.google && (
        <p>
          <a href={`${API_BASE}/auth/login`}>Sign in with Google</a>
        </p>
      )}
      {config?.devSignIn && (
        <form onSubmit={devSignin}>
          <p className="warning" role="alert">
            Development sign-in is on: it takes any email at its word. Never leave it on where
            others can reach this dashboard.
          </p>
          <label>
            Email{" "}
            <input
              name="email"
              type="email"
              value={email}
              onChange={(e) => setEmail(e.target.value)}
              required
            />
          </label>{" "}
          <button type="submit">Sign in (development)</button>
        </form>
      )}
      {config && !config.google && !config.devSignIn && (
        <p className="error">No sign-in is configured on the API (docs/dashboard.md).</p>
      )}
    </section>
  );
}

export default function SigninPage() {
  return (
    <Suspense>
      <Signin />
    </Suspense>
  );
}
