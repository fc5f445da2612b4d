"""The mesh's CDK app, for `npx cdk synth` and `npx cdk deploy` from this folder: the same stack as
`asya synth` and `asya deploy` make, from `mesh.yaml` (cdk.json's context `mesh`). To add the mesh to a
stack of your own instead, use the `AsyaMesh` construct (`from asya_cdk import AsyaMesh`)."""

from asya_cdk.app import main

if __name__ == "__main__":
    main()
