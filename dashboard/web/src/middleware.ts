import { NextResponse } from "next/server";

import { securityHeaders } from "@/lib/csp";

// Built into the image: NEXT_PUBLIC_API_BASE is inlined at build time.
const HEADERS = securityHeaders(process.env.NEXT_PUBLIC_API_BASE);

/** Every response carries the security headers of src/lib/csp.ts. */
export function middleware(): NextResponse {
  const response = NextResponse.next();
  for (const [name, value] of Object.entries(HEADERS)) {
    response.headers.set(name, value);
  }
  return response;
}

export const config = { matcher: "/:path*" };
