//! ProducerIds: hands out cluster-unique producer ids from blocks reserved on the shared disk
//! (store::producer_ids). Its own actor, so a block reservation's file I/O serialises here and
//! nowhere else.

use actix::{Actor, Context, Handler};

use super::messages::AllocateProducerId;
use crate::error_code::ResponseError;
use crate::store::cluster::fence::SelfFence;
use crate::store::producer_ids::ProducerIdAllocator;

pub struct ProducerIds {
    allocator: ProducerIdAllocator,
    /// Checked before an id is handed out: a fenced process's next incarnation reserves above
    /// what it had reserved, so its ids after the fence could be handed out twice.
    fence: SelfFence,
}

impl ProducerIds {
    pub fn new(allocator: ProducerIdAllocator, fence: SelfFence) -> ProducerIds {
        ProducerIds { allocator, fence }
    }
}

impl Actor for ProducerIds {
    type Context = Context<Self>;
}

impl Handler<AllocateProducerId> for ProducerIds {
    type Result = Result<i64, ResponseError>;

    fn handle(&mut self, _: AllocateProducerId, _: &mut Self::Context) -> Self::Result {
        // eos-rules 1: when no id block can be reserved, the client retries.
        let id = self.allocator.next_id().map_err(|e| {
            tracing::error!("producer id block: {e}");
            ResponseError::CoordinatorLoadInProgress
        })?;
        // After the reservation (self-fence): a fenced broker hands out nothing.
        self.fence.check().map_err(|_| ResponseError::CoordinatorLoadInProgress)?;
        Ok(id)
    }
}
