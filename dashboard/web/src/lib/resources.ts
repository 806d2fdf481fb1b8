import type { StubConfig } from "./api";

/** A stub's resources in one short line, e.g. "250m CPU, 1024 MiB, 1× A100". */
export function resources(c?: StubConfig): string {
  if (!c) return "—";
  const parts = [`${c.cpuMillicores}m CPU`, `${c.memoryMib} MiB`];
  if (c.gpuCount > 0) parts.push(`${c.gpuCount}× ${c.gpuTypes.join(" or ") || "GPU"}`);
  return parts.join(", ");
}
