import { PHASE_PRODUCTION_BUILD } from "next/constants.js";

/** @type {(phase: string) => import('next').NextConfig} */
export default function config(phase) {
  // The content security policy names the API, so an image is built for one.
  if (phase === PHASE_PRODUCTION_BUILD && !process.env.NEXT_PUBLIC_API_BASE) {
    throw new Error(
      "NEXT_PUBLIC_API_BASE is not set: build for the API the app will talk to, " +
        "e.g. NEXT_PUBLIC_API_BASE=https://dashboard.example.com/api npm run build",
    );
  }
  return {
    // The image runs .next/standalone/server.js: only the traced files, not
    // the build's node_modules. `next start` still serves (with a warning).
    output: "standalone",
    poweredByHeader: false,
    reactStrictMode: true,
  };
}
