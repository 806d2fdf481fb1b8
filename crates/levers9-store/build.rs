//! Rebuilds the store when a migration changes: `sqlx::migrate!` embeds
//! the SQL files at compile time but does not tell Cargo about them, so
//! without this an edited or added migration would not trigger a rebuild.
fn main() {
    println!("cargo:rerun-if-changed=migrations");
}
