-- The representatives of one selection (_rows), in one statement (its earlier rows were deleted in the same
-- transaction).
INSERT INTO curated.cn_representatives (selection, doc_id, cluster, distance, rank_in_cluster, cluster_size,
                                        embedder, n_clusters, seed, selected_at)
SELECT selection, doc_id, cluster, distance, rank_in_cluster, cluster_size, embedder, n_clusters, seed, selected_at
FROM _rows;
