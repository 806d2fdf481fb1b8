/** A page whose data the controlplane has no API for yet: said plainly, nothing made up. */
export function NotYet({ title, what }: { title: string; what: string }) {
  return (
    <section>
      <h1>{title}</h1>
      <p className="note" data-testid="not-yet">
        Not available yet: the controlplane has no API for {what}. This page fills in once it does.
      </p>
    </section>
  );
}
