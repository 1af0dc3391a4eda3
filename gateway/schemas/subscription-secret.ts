// A subscription's new signing secret, as POST …/{id}/rotate-secret answers it.
import { z } from "zod";

export const RotatedSecret = z
  .object({
    id: z.number().int().positive().describe("The subscription"),
    secret: z.string().describe("The new signing secret (whsec_…): shown once, in this answer, never again"),
    previous_secret_expires_at: z.iso
      .datetime()
      .nullable()
      .describe(
        "Until when the old secret keeps signing too: each POST carries two signatures (webhook-signature: v1,<new> v1,<old>), so a receiver verifies with either while it switches. null when the old secret stopped at once",
      ),
  })
  .meta({
    id: "RotatedSecret",
    description: "A subscription's new signing secret, and when its old one stops signing",
  });

export const rotatedSecretExample = {
  id: 42,
  secret: "whsec_Zm9vYmFyYmF6cXV4cXV1eGNvcmdlZ3JhdWx0Z2FycGx5",
  previous_secret_expires_at: "2026-01-16T09:30:00.000Z",
};
