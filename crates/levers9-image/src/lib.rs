//! OCI images.
