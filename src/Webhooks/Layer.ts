/**
 * The webhooks feature as one layer: the outbox every state change writes its event to, the
 * events' and deliveries' services, and the sender that delivers them. Needs the database and the
 * settings.
 */
import { Layer } from "effect"
import { Fibers } from "../Ops/Fibers.js"
import { Metrics } from "../Ops/Metrics.js"
import { WebhookDeliveries } from "./Deliveries.js"
import { WebhookEvents } from "./Events.js"
import { Outbox } from "./Outbox.js"
import { WebhookSenderLive } from "./Sender.js"

const Sender = WebhookSenderLive.pipe(Layer.provide([WebhookDeliveries.Default, Fibers.Default, Metrics.Default]))

export const WebhooksLive = Layer.mergeAll(Outbox.Default, WebhookEvents.Default, WebhookDeliveries.Default, Sender)
