//! The pipeline's stages, in order. Each is a struct that owns its pool, its knobs and
//! its queues' ends, and runs on worker threads the engine spawns: it takes messages from
//! its input queue, works, and passes them on (see [`crate::messages`]). A partition that
//! fails in a stage fails its job there, with the error.

pub(crate) mod admission;
pub(crate) mod claim;
pub(crate) mod deliver;
pub(crate) mod device;
pub(crate) mod reduce;
pub(crate) mod synthesize;
pub(crate) mod tail;
