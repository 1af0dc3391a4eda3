import { Migration } from "@mikro-orm/migrations";

/**
 * The delivery table is a queue: every attempt updates its row twice (the
 * claim, the record), and each update leaves a dead version whose index
 * entries the claims' and hand-ons' scans still read until a vacuum removes
 * them (the in-flight counts read every row claimed within the lease). With
 * PostgreSQL's defaults a table is vacuumed only once a fifth of it is dead,
 * and analysed once a tenth changed: at 200 deliveries a second the scans
 * slowed as the table grew. Vacuum and analyse it after a fixed number of
 * changes instead, whatever its size.
 */
export class DeliveryQueueAutovacuumSchema extends Migration {
  override async up(): Promise<void> {
    this.addSql(
      `alter table "delivery"."delivery" set (autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 5000,
         autovacuum_analyze_scale_factor = 0, autovacuum_analyze_threshold = 5000)`,
    );
  }

  override async down(): Promise<void> {
    this.addSql(
      `alter table "delivery"."delivery" reset (autovacuum_vacuum_scale_factor, autovacuum_vacuum_threshold, autovacuum_analyze_scale_factor, autovacuum_analyze_threshold)`,
    );
  }
}
