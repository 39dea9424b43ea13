"""InitProducerId: ids and epochs for idempotent producers.

Without a transactional id Kafka hands out a fresh producer id at epoch 0
on every call, whatever id the request names.
"""

from protocol.kafka.apis import by_name
from protocol.kafka.error_codes import ErrorCode

from .registry import handles

API = by_name("InitProducerId")


@handles("InitProducerId", "0-5")
async def init_producer_id(request):
    if request.body.transactional_id is not None:
        return API.Response(error_code=ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
                            producer_epoch=-1)
    producer_id = await request.broker.producer_ids.allocate()
    return API.Response(producer_id=producer_id, producer_epoch=0)
