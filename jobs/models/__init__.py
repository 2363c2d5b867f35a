from jobs.models.api_keys import ApiKey
from jobs.models.incidents import Artifact, Diagnosis, Incident
from jobs.models.teams import Membership, Team
from jobs.models.webhooks import WebhookDelivery, WebhookEndpoint

__all__ = ["ApiKey", "Artifact", "Diagnosis", "Incident", "Membership", "Team", "WebhookDelivery", "WebhookEndpoint"]
