//! codecell-manifest
