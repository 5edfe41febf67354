//! codecell-catalog
