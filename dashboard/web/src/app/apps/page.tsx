import { NotYet } from "@/lib/not-yet";

export default function Apps() {
  return <NotYet title="Apps, stubs and deployments" what="listing apps, stubs and deployments" />;
}
