//! codecell-engine
