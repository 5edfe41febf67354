//! codecell-policy
