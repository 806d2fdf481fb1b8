import { NotYet } from "@/lib/not-yet";

export default function Volumes() {
  return <NotYet title="Volumes" what="listing volumes" />;
}
