// The dashboard API, called from the browser with the session cookie.
// NEXT_PUBLIC_API_BASE is inlined at build time, e.g. https://dashboard.example.com/api.

export const API_BASE = (process.env.NEXT_PUBLIC_API_BASE ?? "").replace(/\/$/, "");

export type SessionInfo = {
  email: string;
  method: string;
  csrfToken: string;
  devSignIn: boolean;
};

export type SigninConfig = { google: boolean; devSignIn: boolean };

export type Task = {
  taskId: string;
  stubId: string;
  functionName: string;
  state: string;
  attempts: number;
  containerId: string;
  workerId: string;
  message: string;
  createdAt: string;
  startedAt: string;
  endedAt: string;
};

/** One attempt of a task: where it ran and how it ended. */
export type TaskAttempt = {
  attempt: number;
  containerId: string;
  workerId: string;
  startedAt: string;
  endedAt: string;
  outcome: string;
  message: string;
};

export type TaskDetail = { task?: Task; attempts: TaskAttempt[] };

export type VolumeMount = { name: string; mountPath: string };
export type StubConfig = {
  image: string;
  cpuMillicores: number;
  memoryMib: number;
  gpuTypes: string[];
  gpuCount: number;
  retries: number;
  timeoutSeconds: number;
  keepWarmSeconds: number;
  concurrency: number;
  env: Record<string, string>;
  secrets: string[];
  pool: string;
  maxContainers: number;
  volumes: VolumeMount[];
};

/** A function as stored; `modulePath` (the file it was defined in) is its app. */
export type Stub = {
  stubId: string;
  name: string;
  modulePath: string;
  functionName: string;
  config?: StubConfig;
  createdAt: string;
};

export type Deployment = {
  appName: string;
  functionName: string;
  stubId: string;
  version: number;
  deployedBy: string;
  createdAt: string;
};

export type StubDetail = { stub?: Stub; recentTasks: Task[]; tasksLookedAt: number };

export type FileEntry = { path: string; isDir: boolean; size: number; modifiedAt: string };

export type Container = {
  containerId: string;
  image: string;
  pool: string;
  workerId: string;
  state: string;
  exitCode: number;
  oomKilled: boolean;
  message: string;
  createdAt: string;
  args: string[];
  secrets: string[];
  gpuType: string;
  gpuCount: number;
};

export type Gpu = { gpuType: string; count: number };
export type Capacity = { cpuMillicores: number; memoryMib: number; gpus: Gpu[] };
export type Worker = {
  workerId: string;
  pool: string;
  hostname: string;
  runtime: string;
  capacity?: Capacity;
  free?: Capacity;
  status: string;
  lastHeartbeatAt: string;
};

export type Token = {
  id: string;
  tokenType: string;
  description: string;
  createdAt: string;
  lastUsedAt: string;
  revokedAt: string;
};

export type Secret = { name: string; createdAt: string; updatedAt: string };
export type Workspace = { id: string; name: string; createdAt: string };

/** The API said 401: the page sends the person to /signin. */
export class NotSignedIn extends Error {}

let csrfToken = "";

async function answer<T>(response: Response): Promise<T> {
  if (response.status === 401) throw new NotSignedIn("not signed in");
  if (!response.ok) {
    const body = await response.json().catch(() => ({}));
    throw new Error(body.error ?? `${response.status} ${response.statusText}`);
  }
  if (response.status === 204) return undefined as T;
  return response.json() as Promise<T>;
}

export async function get<T>(path: string): Promise<T> {
  return answer<T>(await fetch(API_BASE + path, { credentials: "include" }));
}

/** A state-changing call: carries the session's CSRF token. */
export async function post<T>(path: string, body: unknown = {}): Promise<T> {
  const response = await fetch(API_BASE + path, {
    method: "POST",
    credentials: "include",
    headers: { "content-type": "application/json", "x-csrf-token": csrfToken },
    body: JSON.stringify(body),
  });
  return answer<T>(response);
}

/** The signed-in person, or null. */
export async function loadSession(): Promise<SessionInfo | null> {
  try {
    const session = await get<SessionInfo>("/session");
    csrfToken = session.csrfToken;
    return session;
  } catch (e) {
    if (e instanceof NotSignedIn) return null;
    throw e;
  }
}

export function remember(session: SessionInfo): void {
  csrfToken = session.csrfToken;
}

export function bytes(n: number): string {
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let value = n;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit += 1;
  }
  return unit === 0 ? `${n} B` : `${value.toFixed(1)} ${units[unit]}`;
}

export function when(rfc3339: string): string {
  return rfc3339 ? new Date(rfc3339).toLocaleString() : "—";
}
