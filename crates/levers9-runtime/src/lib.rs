//! Container runtimes.
