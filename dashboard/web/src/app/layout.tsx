import type { Metadata } from "next";
import type { ReactNode } from "react";

import "./globals.css";
import { Shell } from "./shell";

export const metadata: Metadata = { title: "levers9" };

export default function RootLayout({ children }: { children: ReactNode }) {
  return (
    <html lang="en">
      <body>
        <Shell>{children}</Shell>
      </body>
    </html>
  );
}
