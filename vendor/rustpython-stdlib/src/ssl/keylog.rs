pub(super) use rustpython_host_env::ssl::keylog::{ConnectionKeyLog, HEADER, KeyLog};
