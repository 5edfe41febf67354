//! codecell
